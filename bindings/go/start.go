package mcpc

/*
#include <stdlib.h>
#include "mcpc.h"
#include "callbacks.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"runtime/cgo"
	"unsafe"
)

// Pending is a request started without blocking (StartCallTool, StartRequest...): no thread
// waits for it. Its result arrives through the library's completion API; Done is closed then.
// ctx cancels it as it cancels a blocking call (the server is told), and closing the client
// completes it with an error matching ErrClosed.
type Pending struct {
	done   chan struct{}
	result json.RawMessage
	err    error
	finish func(*C.mcp_result)
}

// Done is closed once the result is in.
func (p *Pending) Done() <-chan struct{} { return p.done }

// Wait blocks until the result is in and returns it.
func (p *Pending) Wait() (json.RawMessage, error) {
	<-p.done
	return p.result, p.err
}

func failed(err error) *Pending {
	p := &Pending{done: make(chan struct{}), err: err}
	close(p.done)
	return p
}

// StartPing starts ping.
func (c *Client) StartPing(ctx context.Context, opts ...CallOption) *Pending {
	return c.start(ctx, opts, func() *C.mcp_request { return C.mcp_request_ping() })
}

// StartCallTool starts tools/call; args is a JSON object, or nil.
func (c *Client) StartCallTool(ctx context.Context, name string, args any, opts ...CallOption) *Pending {
	cargs, err := cJSON(args)
	if err != nil {
		return failed(err)
	}
	defer C.free(unsafe.Pointer(cargs))
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	return c.start(ctx, opts, func() *C.mcp_request { return C.mcp_request_call_tool(cname, cargs) })
}

// StartTools starts the walk over every page of tools/list: {"tools": [...]}.
func (c *Client) StartTools(ctx context.Context, opts ...CallOption) *Pending {
	return c.start(ctx, opts, func() *C.mcp_request { return C.mcp_request_tools() })
}

// StartRequest starts any request by method name; params is a JSON object, or nil.
func (c *Client) StartRequest(ctx context.Context, method string, params any, opts ...CallOption) *Pending {
	cparams, err := cJSON(params)
	if err != nil {
		return failed(err)
	}
	defer C.free(unsafe.Pointer(cparams))
	cmethod := C.CString(method)
	defer C.free(unsafe.Pointer(cmethod))
	return c.start(ctx, opts, func() *C.mcp_request { return C.mcp_request_other(cmethod, cparams) })
}

// start starts the request build makes, with the options and a token that ctx cancels; what
// the call holds (token, watcher, progress func, its place in c.calls) is let go when its
// completion arrives.
func (c *Client) start(ctx context.Context, opts []CallOption, build func() *C.mcp_request) *Pending {
	if !c.enter() {
		return failed(errClosed())
	}
	var cfg callConfig
	for _, opt := range opts {
		opt(&cfg)
	}
	ro := C.mcp_request_options_new()
	defer C.mcp_request_options_free(ro) // the started call keeps its own copy
	if cfg.meta != nil {
		cmeta := C.CString(string(cfg.meta))
		status := Status(C.mcp_request_options_set_meta(ro, cmeta))
		C.free(unsafe.Pointer(cmeta))
		if status != StatusOK {
			c.calls.Done()
			return failed(&Error{Status: status, Message: "invalid call option: meta"})
		}
	}
	removeProgress := func() {}
	if cfg.progress != nil {
		remove, status := installCallProgress(ro, cfg.progress)
		if status != StatusOK {
			c.calls.Done()
			return failed(&Error{Status: status, Message: "invalid call option: progress"})
		}
		removeProgress = remove
	}
	var token *C.mcp_cancellation
	stop := func() error { return nil }
	if ctx.Done() != nil {
		token = C.mcp_cancellation_new()
		C.mcp_request_options_set_cancellation(ro, token)
		stop = watch(ctx, func(err error) {
			reason := C.CString(err.Error())
			C.mcp_cancellation_cancel(token, reason)
			C.free(unsafe.Pointer(reason))
		})
	}
	p := &Pending{done: make(chan struct{})}
	release := func() error {
		ctxErr := stop()
		if token != nil {
			C.mcp_cancellation_free(token) // after stop: the watcher is done with it
		}
		removeProgress()
		return ctxErr
	}
	p.finish = func(res *C.mcp_result) {
		p.result, p.err = takeResult(res, release())
		close(p.done)
		c.calls.Done()
	}
	req := build()
	defer C.mcp_request_free(req)
	h := cgo.NewHandle(p)
	status := Status(C.mcpc_go_start(c.raw, req, ro, C.uintptr_t(h)))
	if status != StatusOK {
		// Not started: no completion comes.
		h.Delete()
		p.err = &Error{Status: status, Message: "the request was not started"}
		release()
		close(p.done)
		c.calls.Done()
	}
	return p
}

//export mcpcGoCompletion
func mcpcGoCompletion(h C.uintptr_t, result *C.mcp_result) {
	handle := cgo.Handle(h)
	p := handle.Value().(*Pending)
	handle.Delete()
	p.finish(result)
}
