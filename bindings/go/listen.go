package mcpc

/*
#include <stdlib.h>
#include "mcpc.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"unsafe"
)

// ListenFilter says what a listen hears.
type ListenFilter struct {
	// List changes (WithListChangedFunc).
	Tools, Prompts, Resources bool
	// Updates of these resources (WithResourceUpdatedFunc).
	ResourceURIs []string
	// The server's log from this level up (WithMessageFunc): "debug", "info", "warning"...;
	// "" for none.
	LogLevel string
	// EndOnFailure ends the listen when the connection fails, instead of waiting for a
	// reconnect (Connect) and listening again there.
	EndOnFailure bool
}

// Listen hears what the server says outside any call, as the filter asks, until ctx ends (the
// usual way: the error then matches ErrCancelled and ctx's error), a CallTimeout passes (the
// client's timeout does not apply), the client closes, or the server ends it (nil error, its
// final result). The notices go to the client's funcs, first
// notifications/subscriptions/acknowledged (WithNotificationFunc) each time the listen is
// established. Modern era: subscriptions/listen; handshake era: resources/subscribe and
// logging/setLevel, the same code either way.
func (c *Client) Listen(ctx context.Context, filter ListenFilter, opts ...CallOption) (json.RawMessage, error) {
	l := C.mcp_listen_new()
	defer C.mcp_listen_free(l)
	check := func(what string, s C.mcp_status) error {
		if Status(s) != StatusOK {
			return &Error{Status: Status(s), Message: "invalid listen filter: " + what}
		}
		return nil
	}
	if err := check("tools", C.mcp_listen_set_tools_list_changed(l, C.bool(filter.Tools))); err != nil {
		return nil, err
	}
	if err := check("prompts", C.mcp_listen_set_prompts_list_changed(l, C.bool(filter.Prompts))); err != nil {
		return nil, err
	}
	if err := check("resources", C.mcp_listen_set_resources_list_changed(l, C.bool(filter.Resources))); err != nil {
		return nil, err
	}
	if err := check("end on failure", C.mcp_listen_set_end_on_failure(l, C.bool(filter.EndOnFailure))); err != nil {
		return nil, err
	}
	for _, uri := range filter.ResourceURIs {
		curi := C.CString(uri)
		status := C.mcp_listen_add_resource(l, curi)
		C.free(unsafe.Pointer(curi))
		if err := check("resource "+uri, status); err != nil {
			return nil, err
		}
	}
	if filter.LogLevel != "" {
		clevel := C.CString(filter.LogLevel)
		status := C.mcp_listen_set_log_level(l, clevel)
		C.free(unsafe.Pointer(clevel))
		if err := check("log level", status); err != nil {
			return nil, err
		}
	}
	return c.call(ctx, opts, func(cl *C.mcp_client, o *C.mcp_request_options) *C.mcp_result {
		return C.mcp_client_listen(cl, l, o)
	})
}

// Notify sends a notification: method, and params (a JSON object, or nil for none).
func (c *Client) Notify(method string, params any) error {
	cparams, err := cJSON(params)
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(cparams))
	cmethod := C.CString(method)
	defer C.free(unsafe.Pointer(cmethod))
	if !c.enter() {
		return errClosed()
	}
	defer c.calls.Done()
	_, err = takeResult(C.mcp_client_notify(c.raw, cmethod, cparams), nil)
	return err
}

// NotifyRootsListChanged sends notifications/roots/list_changed (handshake era; needs a
// roots/list handler).
func (c *Client) NotifyRootsListChanged() error {
	if !c.enter() {
		return errClosed()
	}
	defer c.calls.Done()
	_, err := takeResult(C.mcp_client_notify_roots_list_changed(c.raw), nil)
	return err
}

// CallBypassCache makes a list call ask the server even when a fresh page is cached (the new
// page is kept).
func CallBypassCache() CallOption {
	return func(c *callConfig) { c.bypassCache = true }
}

// TraceDirection says which way a traced frame went.
type TraceDirection int

const (
	TraceIn  TraceDirection = C.MCP_TRACE_DIRECTION_IN
	TraceOut TraceDirection = C.MCP_TRACE_DIRECTION_OUT
)

// WithTraceFunc turns the wire trace on: fn gets every JSON-RPC frame in and out, in order,
// with the transport ("stdio", "http" or "custom"), on the library's trace thread. HTTP
// headers never appear in it.
func WithTraceFunc(fn func(direction TraceDirection, transport string, frame json.RawMessage)) Option {
	return func(c *config) { c.callbacks.trace = fn }
}
