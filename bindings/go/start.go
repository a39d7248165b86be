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
	return c.startNamed(ctx, name, args, opts, func(cname, cargs *C.char) *C.mcp_request {
		return C.mcp_request_call_tool(cname, cargs)
	})
}

// StartTools starts the walk over every page of tools/list: {"tools": [...]}.
func (c *Client) StartTools(ctx context.Context, opts ...CallOption) *Pending {
	return c.start(ctx, opts, func() *C.mcp_request { return C.mcp_request_tools() })
}

// StartRequest starts any request by method name; params is a JSON object, or nil.
func (c *Client) StartRequest(ctx context.Context, method string, params any, opts ...CallOption) *Pending {
	return c.startNamed(ctx, method, params, opts, func(cmethod, cparams *C.char) *C.mcp_request {
		return C.mcp_request_other(cmethod, cparams)
	})
}

// StartDiscover starts server/discover.
func (c *Client) StartDiscover(ctx context.Context, opts ...CallOption) *Pending {
	return c.start(ctx, opts, func() *C.mcp_request { return C.mcp_request_discover() })
}

// StartReadResource starts resources/read.
func (c *Client) StartReadResource(ctx context.Context, uri string, opts ...CallOption) *Pending {
	return c.startWith(ctx, uri, opts, func(curi *C.char) *C.mcp_request { return C.mcp_request_read_resource(curi) })
}

// StartGetPrompt starts prompts/get; args is a JSON object of strings, or nil.
func (c *Client) StartGetPrompt(ctx context.Context, name string, args any, opts ...CallOption) *Pending {
	return c.startNamed(ctx, name, args, opts, func(cname, cargs *C.char) *C.mcp_request {
		return C.mcp_request_get_prompt(cname, cargs)
	})
}

// StartComplete starts completion/complete, with Complete's arguments.
func (c *Client) StartComplete(ctx context.Context, ref, argument, completionContext any, opts ...CallOption) *Pending {
	var cstrs [3]*C.char
	for i, v := range []any{ref, argument, completionContext} {
		cv, err := cJSON(v)
		if err != nil {
			for _, done := range cstrs[:i] {
				C.free(unsafe.Pointer(done))
			}
			return failed(err)
		}
		cstrs[i] = cv
	}
	defer func() {
		for _, cv := range cstrs {
			C.free(unsafe.Pointer(cv))
		}
	}()
	return c.start(ctx, opts, func() *C.mcp_request {
		return C.mcp_request_complete(cstrs[0], cstrs[1], cstrs[2])
	})
}

// StartSetLoggingLevel starts logging/setLevel (handshake era only).
func (c *Client) StartSetLoggingLevel(ctx context.Context, level string, opts ...CallOption) *Pending {
	return c.startWith(ctx, level, opts, func(clevel *C.char) *C.mcp_request {
		return C.mcp_request_set_logging_level(clevel)
	})
}

// StartSubscribeResource starts resources/subscribe (handshake era only).
func (c *Client) StartSubscribeResource(ctx context.Context, uri string, opts ...CallOption) *Pending {
	return c.startWith(ctx, uri, opts, func(curi *C.char) *C.mcp_request {
		return C.mcp_request_subscribe_resource(curi)
	})
}

// StartUnsubscribeResource starts resources/unsubscribe (handshake era only).
func (c *Client) StartUnsubscribeResource(ctx context.Context, uri string, opts ...CallOption) *Pending {
	return c.startWith(ctx, uri, opts, func(curi *C.char) *C.mcp_request {
		return C.mcp_request_unsubscribe_resource(curi)
	})
}

// StartListTools starts one page of tools/list ("" for the first page).
func (c *Client) StartListTools(ctx context.Context, cursor string, opts ...CallOption) *Pending {
	return c.startPage(ctx, cursor, opts, func(cur *C.char) *C.mcp_request { return C.mcp_request_list_tools(cur) })
}

// StartListResources starts one page of resources/list.
func (c *Client) StartListResources(ctx context.Context, cursor string, opts ...CallOption) *Pending {
	return c.startPage(ctx, cursor, opts, func(cur *C.char) *C.mcp_request { return C.mcp_request_list_resources(cur) })
}

// StartListResourceTemplates starts one page of resources/templates/list.
func (c *Client) StartListResourceTemplates(ctx context.Context, cursor string, opts ...CallOption) *Pending {
	return c.startPage(ctx, cursor, opts, func(cur *C.char) *C.mcp_request {
		return C.mcp_request_list_resource_templates(cur)
	})
}

// StartListPrompts starts one page of prompts/list.
func (c *Client) StartListPrompts(ctx context.Context, cursor string, opts ...CallOption) *Pending {
	return c.startPage(ctx, cursor, opts, func(cur *C.char) *C.mcp_request { return C.mcp_request_list_prompts(cur) })
}

// StartResources starts the walk over every page of resources/list: {"resources": [...]}.
func (c *Client) StartResources(ctx context.Context, opts ...CallOption) *Pending {
	return c.start(ctx, opts, func() *C.mcp_request { return C.mcp_request_resources() })
}

// StartResourceTemplates starts the walk over every page of resources/templates/list.
func (c *Client) StartResourceTemplates(ctx context.Context, opts ...CallOption) *Pending {
	return c.start(ctx, opts, func() *C.mcp_request { return C.mcp_request_resource_templates() })
}

// StartPrompts starts the walk over every page of prompts/list: {"prompts": [...]}.
func (c *Client) StartPrompts(ctx context.Context, opts ...CallOption) *Pending {
	return c.start(ctx, opts, func() *C.mcp_request { return C.mcp_request_prompts() })
}

// startWith starts the request build makes from one string argument.
func (c *Client) startWith(ctx context.Context, arg string, opts []CallOption,
	build func(*C.char) *C.mcp_request) *Pending {
	carg := C.CString(arg)
	defer C.free(unsafe.Pointer(carg))
	return c.start(ctx, opts, func() *C.mcp_request { return build(carg) })
}

// startNamed starts the request build makes from a name and a JSON object (nil: none).
func (c *Client) startNamed(ctx context.Context, name string, object any, opts []CallOption,
	build func(cname, cjson *C.char) *C.mcp_request) *Pending {
	cjson, err := cJSON(object)
	if err != nil {
		return failed(err)
	}
	defer C.free(unsafe.Pointer(cjson))
	return c.startWith(ctx, name, opts, func(cname *C.char) *C.mcp_request { return build(cname, cjson) })
}

// startPage starts one page of a list; "" asks for the first page (a NULL cursor).
func (c *Client) startPage(ctx context.Context, cursor string, opts []CallOption,
	build func(*C.char) *C.mcp_request) *Pending {
	var ccursor *C.char
	if cursor != "" {
		ccursor = C.CString(cursor)
		defer C.free(unsafe.Pointer(ccursor))
	}
	return c.start(ctx, opts, func() *C.mcp_request { return build(ccursor) })
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
