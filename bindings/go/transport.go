package mcpc

/*
#include <stdlib.h>
#include "transport.h"
*/
import "C"

import (
	"encoding/json"
	"runtime/cgo"
	"sync"
	"unsafe"
)

// Transport is a way to reach a server of the host's own (see NewCustom).
//
// SendRequest runs on a library thread, one per request, several at once: it writes request
// (one JSON-RPC request), calls sent once the bytes are on the wire (at most once; a cancel
// notice waits for it), then waits for the response and returns it. SendNotification writes a
// notification (notifications/cancelled among them) from a thread of the library's shared I/O pool
// (named mcpc-io, one at a time per client).
// Close is called once, when the client closes: it must make every running SendRequest
// return soon.
type Transport interface {
	SendRequest(request json.RawMessage, sent func()) (json.RawMessage, error)
	SendNotification(notification json.RawMessage) error
	Close()
}

// NewCustom makes a client over a Transport of the host's own.
func NewCustom(t Transport, opts ...Option) (*Client, error) {
	h := cgo.NewHandle(t)
	c, err := newClient(opts, func(o *C.mcp_client_options) *C.mcp_client {
		return C.mcpc_go_new_custom(C.uintptr_t(h), o)
	})
	if err != nil {
		h.Delete()
		return nil, err
	}
	c.afterFree = append(c.afterFree, h.Delete) // the library holds h until it is freed
	return c, nil
}

func transportOf(h C.uintptr_t) Transport {
	return cgo.Handle(h).Value().(Transport)
}

//export mcpcGoSendRequest
func mcpcGoSendRequest(h C.uintptr_t, request *C.char, onSent C.mcp_on_sent, sentCtx unsafe.Pointer, reply *C.mcp_transport_reply) C.bool {
	var once sync.Once
	sent := func() { once.Do(func() { C.mcpc_go_sent(onSent, sentCtx) }) }
	response, err := transportOf(h).SendRequest(json.RawMessage(C.GoString(request)), sent)
	if err != nil {
		cmessage := C.CString(err.Error())
		C.mcp_transport_reply_set_error(reply, cmessage)
		C.free(unsafe.Pointer(cmessage))
		return false
	}
	cresponse := C.CString(string(response))
	defer C.free(unsafe.Pointer(cresponse))
	return C.mcp_transport_reply_set_response(reply, cresponse)
}

//export mcpcGoSendNotification
func mcpcGoSendNotification(h C.uintptr_t, notification *C.char) C.bool {
	return transportOf(h).SendNotification(json.RawMessage(C.GoString(notification))) == nil
}

//export mcpcGoCloseTransport
func mcpcGoCloseTransport(h C.uintptr_t) {
	transportOf(h).Close()
}
