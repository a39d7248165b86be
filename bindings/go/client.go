package mcpc

/*
#include <stdlib.h>
#include <string.h>
#include "mcpc.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"runtime/cgo"
	"sync"
	"unsafe"
)

// Client is a connection to one MCP server. Its methods may be called from any number of
// goroutines at once. Close it when done: that ends every call still running and stops the
// server.
type Client struct {
	raw    *C.mcp_client
	handle cgo.Handle // the client's callbacks, 0 when none
	mu     sync.Mutex // guards closed, and calls.Add against Close
	closed bool
	calls  sync.WaitGroup // calls inside the library; Close waits for them before freeing
	// afterFree runs once the library has freed the client (handles it held).
	afterFree []func()
}

// NewStdio makes a client for a server run as a child process: argv[0] is looked up in PATH
// and run with argv[1:], without a shell. Nothing starts until Connect.
func NewStdio(argv []string, opts ...Option) (*Client, error) {
	// The library copies argv; C memory holds it meanwhile (cgo may not pass Go pointers to
	// Go pointers).
	cargv := C.malloc(C.size_t(len(argv)+1) * C.size_t(unsafe.Sizeof(uintptr(0))))
	defer C.free(cargv)
	slots := unsafe.Slice((**C.char)(cargv), len(argv)+1)
	for i, arg := range argv {
		slots[i] = C.CString(arg)
		defer C.free(unsafe.Pointer(slots[i]))
	}
	slots[len(argv)] = nil
	return newClient(opts, func(o *C.mcp_client_options) *C.mcp_client {
		return C.mcp_client_new_stdio((**C.char)(cargv), o)
	})
}

// NewHTTP makes a client for a server reached by Streamable HTTP at url, e.g.
// "https://host/mcp". Nothing is sent until Connect.
func NewHTTP(url string, opts ...Option) (*Client, error) {
	curl := C.CString(url)
	defer C.free(unsafe.Pointer(curl))
	return newClient(opts, func(o *C.mcp_client_options) *C.mcp_client {
		return C.mcp_client_new_http(curl, o)
	})
}

func newClient(opts []Option, create func(*C.mcp_client_options) *C.mcp_client) (*Client, error) {
	var cfg config
	for _, opt := range opts {
		opt(&cfg)
	}
	copts := C.mcp_client_options_new()
	defer C.mcp_client_options_free(copts)
	for _, s := range cfg.setters {
		if status := Status(s.apply(copts)); status != StatusOK {
			return nil, &Error{Status: status, Message: "invalid option: " + s.what}
		}
	}
	c := &Client{}
	if cfg.callbacks.any() {
		h, status := cfg.callbacks.install(copts)
		if status != StatusOK {
			return nil, &Error{Status: status, Message: "invalid option: callbacks"}
		}
		c.handle = h
	}
	c.raw = create(copts)
	return c, nil
}

// Close ends the session: calls still running return an error matching ErrClosed at once,
// then the server process is stopped. It waits for those calls to leave the library, so it
// must not be called from a callback. Closing twice is harmless.
func (c *Client) Close() error {
	c.mu.Lock()
	wasClosed := c.closed
	c.closed = true
	c.mu.Unlock()
	if wasClosed {
		return nil
	}
	C.mcp_client_close(c.raw) // safe more than once, and while calls run: it ends them
	c.calls.Wait()
	C.mcp_client_free(c.raw)
	if c.handle != 0 {
		c.handle.Delete() // only now: the library's threads are gone
	}
	for _, f := range c.afterFree {
		f()
	}
	return nil
}

// enter registers a call, unless the client is closed; the caller calls c.calls.Done.
func (c *Client) enter() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.calls.Add(1)
	return true
}

func errClosed() error {
	return &Error{Status: StatusClosed, Message: "the client was closed"}
}

// Connect starts the server and learns its protocol era; the result is the server's
// initialize (or server/discover) result. The handshake is never cancelled on the wire: if
// ctx ends first, the client is closed and the error matches ctx's error and ErrClosed.
func (c *Client) Connect(ctx context.Context) (json.RawMessage, error) {
	if !c.enter() {
		return nil, errClosed()
	}
	defer c.calls.Done()
	stop := watch(ctx, func(error) { C.mcp_client_close(c.raw) })
	res := C.mcp_client_connect(c.raw)
	return takeResult(res, stop())
}

// call makes one request with a cancellation token that ctx cancels, ctx's error giving the
// reason, so that the server is told why.
func (c *Client) call(ctx context.Context, opts []CallOption,
	do func(*C.mcp_client, *C.mcp_request_options) *C.mcp_result) (json.RawMessage, error) {
	if !c.enter() {
		return nil, errClosed()
	}
	defer c.calls.Done()

	var cfg callConfig
	for _, opt := range opts {
		opt(&cfg)
	}
	ro := C.mcp_request_options_new()
	defer C.mcp_request_options_free(ro)
	if err := cfg.callExtras.apply(ro); err != nil {
		return nil, err
	}
	if cfg.meta != nil {
		cmeta := C.CString(string(cfg.meta))
		status := Status(C.mcp_request_options_set_meta(ro, cmeta))
		C.free(unsafe.Pointer(cmeta))
		if status != StatusOK {
			return nil, &Error{Status: status, Message: "invalid call option: meta"}
		}
	}
	if cfg.progress != nil {
		remove, status := installCallProgress(ro, cfg.progress)
		if status != StatusOK {
			return nil, &Error{Status: status, Message: "invalid call option: progress"}
		}
		defer remove()
	}

	// A context that can never end needs no token.
	if ctx.Done() == nil {
		return takeResult(do(c.raw, ro), nil)
	}
	token := C.mcp_cancellation_new()
	defer C.mcp_cancellation_free(token) // runs after stop(): the watcher is done with it
	C.mcp_request_options_set_cancellation(ro, token)
	stop := watch(ctx, func(err error) {
		reason := C.CString(err.Error())
		C.mcp_cancellation_cancel(token, reason)
		C.free(unsafe.Pointer(reason))
	})
	res := do(c.raw, ro)
	return takeResult(res, stop())
}

// watch runs cancel(ctx.Err()) when ctx ends, until stop is called; stop returns ctx's error
// if cancel ran, else nil. A context that has already ended is acted on before watch
// returns, so a call made with it sends nothing.
func watch(ctx context.Context, cancel func(error)) (stop func() error) {
	if ctx.Done() == nil {
		return func() error { return nil }
	}
	if err := ctx.Err(); err != nil {
		cancel(err)
		return func() error { return err }
	}
	stopped := make(chan struct{})
	fired := make(chan error, 1)
	go func() {
		select {
		case <-ctx.Done():
			err := ctx.Err()
			cancel(err)
			fired <- err
		case <-stopped:
			fired <- nil
		}
	}()
	return func() error {
		close(stopped)
		return <-fired
	}
}

// takeResult turns a result into Go values and frees it. ctxErr is the context's error when
// the context cancelled the call. The JSON is also returned with StatusInputRequired: it is
// the server's interim result.
func takeResult(res *C.mcp_result, ctxErr error) (json.RawMessage, error) {
	defer C.mcp_result_free(res)
	out := copyJSON(C.mcp_result_json(res))
	status := Status(C.mcp_result_status(res))
	if status == StatusOK {
		return out, nil
	}
	e := &Error{
		Status:       status,
		Code:         int64(C.mcp_result_error_code(res)),
		Message:      C.GoString(C.mcp_result_message(res)),
		Data:         copyJSON(C.mcp_result_error_data(res)),
		RequestID:    int64(C.mcp_result_request_id(res)),
		CancelReason: C.GoString(C.mcp_result_cancel_reason(res)),
	}
	// Only an outcome the context caused wraps its error (a failure that raced it does not).
	if status == StatusCancelled || status == StatusClosed {
		e.ctx = ctxErr
	}
	return out, e
}

// copyJSON copies a library-owned JSON string into Go memory; nil for NULL.
func copyJSON(s *C.char) json.RawMessage {
	if s == nil {
		return nil
	}
	return C.GoBytes(unsafe.Pointer(s), C.int(C.strlen(s)))
}

// cJSON encodes a Go value as a C string for the library (free it with C.free): nil, or a
// value that encodes as null, gives NULL; json.RawMessage passes through (validated).
func cJSON(v any) (*C.char, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, &Error{Status: StatusInvalidArgument, Message: err.Error()}
	}
	if string(b) == "null" {
		return nil, nil
	}
	return C.CString(string(b)), nil
}

// cString is NULL for "", for the library's optional strings (cursors).
func cString(s string) *C.char {
	if s == "" {
		return nil
	}
	return C.CString(s)
}

// info reads one of the client's own strings (server info, version...).
func (c *Client) info(get func(*C.mcp_client) *C.char) string {
	if !c.enter() {
		return ""
	}
	defer c.calls.Done()
	return C.GoString(get(c.raw))
}
