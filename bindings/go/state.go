package mcpc

/*
#include <stdlib.h>
#include "mcpc.h"
*/
import "C"

import (
	"context"
	"unsafe"
)

// ConnectionState is where a client stands (see the README's reconnect contract).
type ConnectionState int

const (
	StateNotConnected ConnectionState = C.MCP_CONNECTION_STATE_NOT_CONNECTED
	StateConnecting   ConnectionState = C.MCP_CONNECTION_STATE_CONNECTING
	StateConnected    ConnectionState = C.MCP_CONNECTION_STATE_CONNECTED
	// StateFailed: the connection failed after connecting; Connect starts a new one.
	StateFailed ConnectionState = C.MCP_CONNECTION_STATE_FAILED
	StateClosed ConnectionState = C.MCP_CONNECTION_STATE_CLOSED
)

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
