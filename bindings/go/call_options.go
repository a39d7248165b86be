package mcpc

/*
#include <stdlib.h>
#include "mcpc.h"
*/
import "C"

import (
	"encoding/json"
	"time"
	"unsafe"
)

// The call options beyond progress and _meta (options.go), applied by callExtras.apply.
type callExtras struct {
	timeout         *time.Duration
	resetOnProgress bool
	maxTotal        time.Duration
	progressToken   *string
	inputResponses  json.RawMessage
	requestState    *string
	returnTask      bool
	bypassCache     bool
}

// CallTimeout overrides the client's timeout for this call; 0 means none, even if the client
// has one. A context deadline does the same.
func CallTimeout(d time.Duration) CallOption {
	return func(c *callConfig) { c.timeout = &d }
}

// CallResetTimeoutOnProgress restarts the call's timeout on each progress report (never past
// CallMaxTotalTimeout).
func CallResetTimeoutOnProgress() CallOption {
	return func(c *callConfig) { c.resetOnProgress = true }
}

// CallMaxTotalTimeout is a hard limit on the whole call, whatever progress arrives
// (StatusTimeout when it passes).
func CallMaxTotalTimeout(d time.Duration) CallOption {
	return func(c *callConfig) { c.maxTotal = d }
}

// CallProgressToken sends this progress token (a string) in params._meta.progressToken.
func CallProgressToken(token string) CallOption {
	return func(c *callConfig) { c.progressToken = &token }
}

// CallInputResponses continues an input_required result by hand (see StatusInputRequired):
// responses answers its inputRequests (an object keyed as they are) and requestState is its
// requestState, echoed unchanged ("" when it had none).
func CallInputResponses(responses json.RawMessage, requestState string) CallOption {
	return func(c *callConfig) {
		c.inputResponses = responses
		if requestState != "" {
			c.requestState = &requestState
		}
	}
}

// apply sets the extras on the C request options.
func (x *callExtras) apply(ro *C.mcp_request_options) error {
	fail := func(what string, s C.mcp_status) error {
		if Status(s) == StatusOK {
			return nil
		}
		return &Error{Status: Status(s), Message: "invalid call option: " + what}
	}
	withString := func(value string, set func(*C.char) C.mcp_status) C.mcp_status {
		cvalue := C.CString(value)
		defer C.free(unsafe.Pointer(cvalue))
		return set(cvalue)
	}
	if x.timeout != nil {
		if err := fail("timeout", C.mcp_request_options_set_timeout_ms(ro, millis(*x.timeout))); err != nil {
			return err
		}
	}
	if x.resetOnProgress {
		if err := fail("reset timeout on progress", C.mcp_request_options_set_reset_timeout_on_progress(ro, true)); err != nil {
			return err
		}
	}
	if x.maxTotal > 0 {
		if err := fail("max total timeout", C.mcp_request_options_set_max_total_timeout_ms(ro, millis(x.maxTotal))); err != nil {
			return err
		}
	}
	if x.progressToken != nil {
		s := withString(*x.progressToken, func(v *C.char) C.mcp_status { return C.mcp_request_options_set_progress_token(ro, v) })
		if err := fail("progress token", s); err != nil {
			return err
		}
	}
	if x.inputResponses != nil {
		s := withString(string(x.inputResponses), func(v *C.char) C.mcp_status { return C.mcp_request_options_set_input_responses(ro, v) })
		if err := fail("input responses", s); err != nil {
			return err
		}
	}
	if x.requestState != nil {
		s := withString(*x.requestState, func(v *C.char) C.mcp_status { return C.mcp_request_options_set_request_state(ro, v) })
		if err := fail("request state", s); err != nil {
			return err
		}
	}
	if x.bypassCache {
		if err := fail("bypass cache", C.mcp_request_options_set_bypass_cache(ro, true)); err != nil {
			return err
		}
	}
	if x.returnTask {
		if err := fail("return task", C.mcp_request_options_set_return_task(ro, true)); err != nil {
			return err
		}
	}
	return nil
}
