package mcpc

/*
#include <stdlib.h>
#include "handlers.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"errors"
	"time"
	"unsafe"
)

// A RequestHandler answers a request the server makes of the client (elicitation/create,
// sampling/createMessage, roots/list): it gets the method and params and returns the result,
// a JSON object. A *HandlerError gives the server that JSON-RPC error; any other error is sent
// as -32603 with its text. ctx ends when the server cancels its request, the call that met it
// (multi round-trip input, a task's input) is cancelled, or the client is closing: the answer
// is then not sent.
//
// Handshake era: it runs on a library thread of its own per server request, several at once.
// Modern era: on the goroutine of the call that met the request. It may make calls on the
// client, but must not Close it.
type RequestHandler func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)

// HandlerError is a JSON-RPC error a RequestHandler answers with.
type HandlerError struct {
	Code    int64
	Message string
}

func (e *HandlerError) Error() string { return e.Message }

// WithRequestHandler registers the handler of one server request method. Registering one
// declares the matching client capability (roots, sampling, elicitation) unless
// WithCapabilities set them.
func WithRequestHandler(method string, fn RequestHandler) Option {
	return func(c *config) {
		if c.callbacks.handlers == nil {
			c.callbacks.handlers = map[string]RequestHandler{}
		}
		c.callbacks.handlers[method] = fn
	}
}

// WithElicitationURL says the elicitation/create handler also takes URL-mode requests
// ("mode": "url"): the client declares elicitation.url.
func WithElicitationURL() Option {
	return withSetter("elicitation url", func(o *C.mcp_client_options) C.mcp_status {
		return C.mcp_client_options_set_elicitation_url(o, true)
	})
}

// WithSamplingTools says the sampling/createMessage handler takes requests with tools: the
// client declares sampling.tools.
func WithSamplingTools() Option {
	return withSetter("sampling tools", func(o *C.mcp_client_options) C.mcp_status {
		return C.mcp_client_options_set_sampling_tools(o, true)
	})
}

// ElicitationDefaults fills what an elicitation answer's content leaves out with the defaults
// of the request's requestedSchema (SEP-1034); content may be nil.
func ElicitationDefaults(requestedSchema, content json.RawMessage) (json.RawMessage, error) {
	cschema, err := cJSON(requestedSchema)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cschema))
	ccontent, err := cJSON(content)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(ccontent))
	return takeResult(C.mcp_elicitation_defaults(cschema, ccontent), nil)
}

// installHandlers registers the request handlers under the client's callbacks handle.
func (cb *callbacks) installHandlers(o *C.mcp_client_options, h C.uintptr_t) Status {
	for method := range cb.handlers {
		cmethod := C.CString(method)
		status := Status(C.mcpc_go_request_handler(o, cmethod, h))
		C.free(unsafe.Pointer(cmethod))
		if status != StatusOK {
			return status
		}
	}
	return StatusOK
}

// How often a running handler's context looks at whether its reply was cancelled.
const handlerCancelPoll = 10 * time.Millisecond

//export mcpcGoRequest
func mcpcGoRequest(h C.uintptr_t, method, params *C.char, reply *C.mcp_handler_reply) C.bool {
	name := C.GoString(method)
	fn := callbacksOf(h).handlers[name]
	if fn == nil {
		C.mcp_handler_reply_set_error(reply, -32601, nil)
		return false
	}
	ctx, cancel := context.WithCancel(context.Background())
	// The reply is valid during this call only: the watcher ends before it returns.
	done := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		ticker := time.NewTicker(handlerCancelPoll)
		defer ticker.Stop()
		for {
			select {
			case <-done:
				return
			case <-ticker.C:
				if C.mcp_handler_reply_is_cancelled(reply) {
					cancel()
					return
				}
			}
		}
	}()
	result, err := fn(ctx, name, optionalJSON(params))
	close(done)
	<-watched
	cancel()
	if err != nil {
		code, message := int64(-32603), err.Error()
		var he *HandlerError
		if errors.As(err, &he) {
			code, message = he.Code, he.Message
		}
		cmessage := C.CString(message)
		C.mcp_handler_reply_set_error(reply, C.int64_t(code), cmessage)
		C.free(unsafe.Pointer(cmessage))
		return false
	}
	cresult := C.CString(string(result))
	ok := C.mcp_handler_reply_set_result(reply, cresult)
	C.free(unsafe.Pointer(cresult))
	if !ok {
		cmessage := C.CString("the handler's result is not a JSON object")
		C.mcp_handler_reply_set_error(reply, -32603, cmessage)
		C.free(unsafe.Pointer(cmessage))
	}
	return ok
}
