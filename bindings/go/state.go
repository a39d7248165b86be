package mcpc

/*
#include <stdlib.h>
#include "mcpc.h"
*/
import "C"

import (
	"context"
	"time"
	"unsafe"
)

// ConnectionState is where a client stands (see the README's reconnect contract).
type ConnectionState int

const (
	StateNotConnected ConnectionState = C.MCP_CONNECTION_STATE_NOT_CONNECTED
	StateConnecting   ConnectionState = C.MCP_CONNECTION_STATE_CONNECTING
	StateConnected    ConnectionState = C.MCP_CONNECTION_STATE_CONNECTED
	// StateFailed: the connection failed after connecting (or connecting again did); Connect,
	// or with WithReconnect the next call, starts a new one.
	StateFailed ConnectionState = C.MCP_CONNECTION_STATE_FAILED
	StateClosed ConnectionState = C.MCP_CONNECTION_STATE_CLOSED
	// StateReconnecting: a connect that replaces a failed connection is under way.
	StateReconnecting ConnectionState = C.MCP_CONNECTION_STATE_RECONNECTING
)

// WithReconnect makes connections heal themselves: a call that finds the connection failed
// (the stdio server exited, the HTTP server ended the session) connects again first, with the
// same handshake, and open listens are established again. A call already sent when the
// failure came fails and is never sent again. Each such call makes up to maxAttempts connects,
// waiting firstDelay after the first failure, doubled each time up to maxDelay, each wait
// moved by up to jitter (0 to 1) of itself; the call's context and Close end a wait at once.
// Suggested: 100 ms, 30 s, 0.2, 5.
func WithReconnect(firstDelay, maxDelay time.Duration, jitter float64, maxAttempts uint32) Option {
	return withSetter("reconnect policy", func(o *C.mcp_client_options) C.mcp_status {
		return C.mcp_client_options_set_reconnect_policy(o, millis(firstDelay), millis(maxDelay),
			C.double(jitter), C.uint32_t(maxAttempts))
	})
}

// WithStateFunc hears each transition of the connection, in order (StateConnecting,
// StateConnected, StateFailed, StateReconnecting, StateNotConnected after a first connect
// failed, and last StateClosed), on a library thread that runs no other callback.
func WithStateFunc(fn func(ConnectionState)) Option {
	return func(c *config) { c.callbacks.state = fn }
}

// State says where the client stands.
func (c *Client) State() ConnectionState {
	if !c.enter() {
		return StateClosed
	}
	defer c.calls.Done()
	return ConnectionState(C.mcp_client_connection_state(c.raw))
}

// SubscribeResource sends resources/subscribe (handshake era only, else StatusNotSupported):
// updates reach WithResourceUpdatedFunc.
func (c *Client) SubscribeResource(ctx context.Context, uri string, opts ...CallOption) error {
	curi := C.CString(uri)
	defer C.free(unsafe.Pointer(curi))
	_, err := c.call(ctx, opts, func(cl *C.mcp_client, o *C.mcp_request_options) *C.mcp_result {
		return C.mcp_client_subscribe_resource(cl, curi, o)
	})
	return err
}

// UnsubscribeResource sends resources/unsubscribe (handshake era only).
func (c *Client) UnsubscribeResource(ctx context.Context, uri string, opts ...CallOption) error {
	curi := C.CString(uri)
	defer C.free(unsafe.Pointer(curi))
	_, err := c.call(ctx, opts, func(cl *C.mcp_client, o *C.mcp_request_options) *C.mcp_result {
		return C.mcp_client_unsubscribe_resource(cl, curi, o)
	})
	return err
}
