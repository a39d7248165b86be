// Package mcpc is a Go client for MCP (Model Context Protocol) servers, over the mcpc C
// library (include/mcpc.h) through cgo.
//
// Every request method blocks its goroutine until the server answers and takes a
// context.Context: when the context is cancelled or its deadline passes, the call returns at
// once and the server is sent notifications/cancelled with the context's error as the reason.
// Results are the server's JSON, as json.RawMessage; failures are *Error values.
//
// A Client may be used by any number of goroutines at once.
//
// # Linking
//
// The package compiles against the repository's header (include/mcpc.h) and links -lmcpc from
// the linker's search path: either an installed library (cmake --install, see the README), or
// cargo's output named through the environment:
//
//	CGO_LDFLAGS="-L$DIR -Wl,-rpath,$DIR" go test ./...
//
// where $DIR holds libmcpc.so and the soname link libmcpc.so.0 (bindings/go/test.sh makes
// one from target/release). With an installed mcpc.pc, CGO_CFLAGS and CGO_LDFLAGS can come
// from pkg-config --cflags --libs mcpc.
package mcpc

/*
#cgo CFLAGS: -I${SRCDIR}/../../include
#cgo LDFLAGS: -lmcpc
#include <stdlib.h>
#include "mcpc.h"
*/
import "C"

// Version is the library's version at run time, e.g. "0.1.0".
func Version() string {
	return C.GoString(C.mcp_version())
}

// Status is the outcome of a call: the library's stable status numbers.
type Status int

// The statuses, with the numbers of the C API's mcp_status.
const (
	StatusOK              Status = C.MCP_STATUS_OK
	StatusServerError     Status = C.MCP_STATUS_SERVER_ERROR
	StatusCancelled       Status = C.MCP_STATUS_CANCELLED
	StatusTimeout         Status = C.MCP_STATUS_TIMEOUT
	StatusTransportError  Status = C.MCP_STATUS_TRANSPORT_ERROR
	StatusProtocolError   Status = C.MCP_STATUS_PROTOCOL_ERROR
	StatusClosed          Status = C.MCP_STATUS_CLOSED
	StatusInvalidArgument Status = C.MCP_STATUS_INVALID_ARGUMENT
	StatusPaginationLimit Status = C.MCP_STATUS_PAGINATION_LIMIT
	StatusNotConnected    Status = C.MCP_STATUS_NOT_CONNECTED
	StatusInternalError   Status = C.MCP_STATUS_INTERNAL_ERROR
	StatusInputRequired   Status = C.MCP_STATUS_INPUT_REQUIRED
	StatusSessionExpired  Status = C.MCP_STATUS_SESSION_EXPIRED
	StatusNotSupported    Status = C.MCP_STATUS_NOT_SUPPORTED
	// StatusURLElicitationRequired: the server answered -32042; Error.Data lists the
	// elicitations (url, elicitationId) the user must complete first.
	StatusURLElicitationRequired Status = C.MCP_STATUS_URL_ELICITATION_REQUIRED
)

// String is the status's stable name, e.g. "CANCELLED".
func (s Status) String() string {
	return C.GoString(C.mcp_status_name(C.int(s)))
}
