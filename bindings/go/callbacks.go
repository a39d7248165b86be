package mcpc

/*
#include "callbacks.h"
*/
import "C"

import (
	"encoding/json"
	"runtime/cgo"
	"sync"
	"sync/atomic"
)

// callbacks are the Go functions a client hands the library. The library gets a cgo.Handle of
// them as userdata (it may not hold a Go pointer); the handle lives until the client is freed,
// when the library's threads have stopped.
type callbacks struct {
	progress     func(Progress)
	notification func(method string, params json.RawMessage)
	stderr       func(line string)
	state        func(ConnectionState) // state.go
	// OAuth and the header provider (oauth.go).
	authorize AuthorizeFunc
	tokenLoad func(serverURL, issuer string) (json.RawMessage, bool)
	tokenSave func(serverURL, issuer string, tokens json.RawMessage)
	headers   func(url string) (map[string]string, error)
	// The workload's token and the enterprise identity provider (oauth.go).
	workloadToken    func() (string, error)
	identityProvider *IdentityProvider
	// The host's signer for private_key_jwt (oauth.go).
	clientSign                       func([]byte) ([]byte, error)
	clientSignAlgorithm, clientKeyID string
	// handlers.go and events.go
	handlers        map[string]RequestHandler
	log             func(LogLevel, string)
	message         func(LogMessage)
	listChanged     func(kind string)
	resourceUpdated func(uri string)
	trace           func(TraceDirection, string, json.RawMessage) // listen.go
}

func (cb *callbacks) any() bool {
	return cb.progress != nil || cb.notification != nil || cb.stderr != nil || cb.state != nil ||
		cb.anyAuth() ||
		len(cb.handlers) > 0 || cb.log != nil || cb.message != nil || cb.listChanged != nil ||
		cb.resourceUpdated != nil || cb.trace != nil
}

// install registers the set callbacks on C client options under one new handle, which the
// caller deletes once the client is freed.
func (cb *callbacks) install(o *C.mcp_client_options) (cgo.Handle, Status) {
	h := cgo.NewHandle(cb)
	status := StatusOK
	set := func(s C.mcp_status) {
		if status == StatusOK {
			status = Status(s)
		}
	}
	if cb.progress != nil {
		set(C.mcpc_go_client_progress(o, C.uintptr_t(h)))
	}
	if cb.notification != nil {
		set(C.mcpc_go_notification(o, C.uintptr_t(h)))
	}
	if cb.stderr != nil {
		set(C.mcpc_go_stderr(o, C.uintptr_t(h)))
	}
	if cb.state != nil {
		set(C.mcpc_go_state(o, C.uintptr_t(h)))
	}
	cb.installAuth(o, C.uintptr_t(h), set)
	if status == StatusOK {
		status = cb.installHandlers(o, C.uintptr_t(h))
	}
	if status == StatusOK {
		status = cb.installEvents(o, C.uintptr_t(h))
	}
	if status != StatusOK {
		h.Delete()
	}
	return h, status
}

// The progress funcs of calls in flight, by key. The library may deliver a call's last
// progress after the call has returned (its callback thread runs behind the reader), so a
// call's C userdata is a key, not a cgo.Handle: a late key finds nothing and the progress is
// dropped, where a deleted handle would panic.
var (
	callProgress    sync.Map // uint64 -> func(Progress)
	lastProgressKey atomic.Uint64
)

// installCallProgress registers fn as the progress callback of one call; the caller calls
// remove once the call has returned.
func installCallProgress(o *C.mcp_request_options, fn func(Progress)) (remove func(), status Status) {
	key := lastProgressKey.Add(1)
	callProgress.Store(key, fn)
	remove = func() { callProgress.Delete(key) }
	status = Status(C.mcpc_go_call_progress(o, C.uintptr_t(key)))
	if status != StatusOK {
		remove()
	}
	return remove, status
}

func callbacksOf(h C.uintptr_t) *callbacks {
	return cgo.Handle(h).Value().(*callbacks)
}

// optionalJSON is nil for a NULL string.
func optionalJSON(s *C.char) json.RawMessage {
	if s == nil {
		return nil
	}
	return json.RawMessage(C.GoString(s))
}

func progressOf(token *C.char, progress, total C.double, message *C.char) Progress {
	return Progress{
		Token:    optionalJSON(token),
		Progress: float64(progress),
		Total:    float64(total),
		Message:  C.GoString(message),
	}
}

//export mcpcGoProgress
func mcpcGoProgress(h C.uintptr_t, token *C.char, progress, total C.double, message *C.char) {
	callbacksOf(h).progress(progressOf(token, progress, total, message))
}

//export mcpcGoCallProgress
func mcpcGoCallProgress(key C.uintptr_t, token *C.char, progress, total C.double, message *C.char) {
	if fn, ok := callProgress.Load(uint64(key)); ok {
		fn.(func(Progress))(progressOf(token, progress, total, message))
	}
}

//export mcpcGoNotification
func mcpcGoNotification(h C.uintptr_t, method, params *C.char) {
	callbacksOf(h).notification(C.GoString(method), optionalJSON(params))
}

//export mcpcGoStderr
func mcpcGoStderr(h C.uintptr_t, line *C.char) {
	callbacksOf(h).stderr(C.GoString(line))
}

//export mcpcGoState
func mcpcGoState(h C.uintptr_t, state C.int) {
	callbacksOf(h).state(ConnectionState(state))
}
