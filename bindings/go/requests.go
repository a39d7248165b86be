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

// The request methods. Each blocks until the server answers, ctx ends (the call is cancelled
// and the server told), the client's timeout passes or the client is closed. Arguments typed
// any are encoded with encoding/json (a json.RawMessage goes as it is; nil sends none).

// Ping sends ping (handshake era; a modern server answers a -32601 error).
func (c *Client) Ping(ctx context.Context, opts ...CallOption) error {
	_, err := c.call(ctx, opts, func(cl *C.mcp_client, o *C.mcp_request_options) *C.mcp_result {
		return C.mcp_client_ping(cl, o)
	})
	return err
}

// Discover sends server/discover (handshake-era servers answer a -32601 error).
func (c *Client) Discover(ctx context.Context, opts ...CallOption) (json.RawMessage, error) {
	return c.call(ctx, opts, func(cl *C.mcp_client, o *C.mcp_request_options) *C.mcp_result {
		return C.mcp_client_discover(cl, o)
	})
}

// CallTool calls a tool; the result is the tool's result object (content, structuredContent,
// isError). args is a JSON object, or nil.
func (c *Client) CallTool(ctx context.Context, name string, args any, opts ...CallOption) (json.RawMessage, error) {
	cargs, err := cJSON(args)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cargs))
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	return c.call(ctx, opts, func(cl *C.mcp_client, o *C.mcp_request_options) *C.mcp_result {
		return C.mcp_client_call_tool(cl, cname, cargs, o)
	})
}

// ReadResource sends resources/read; the result is {"contents": [...]}.
func (c *Client) ReadResource(ctx context.Context, uri string, opts ...CallOption) (json.RawMessage, error) {
	curi := C.CString(uri)
	defer C.free(unsafe.Pointer(curi))
	return c.call(ctx, opts, func(cl *C.mcp_client, o *C.mcp_request_options) *C.mcp_result {
		return C.mcp_client_read_resource(cl, curi, o)
	})
}

// GetPrompt sends prompts/get; args is a JSON object of strings, or nil.
func (c *Client) GetPrompt(ctx context.Context, name string, args any, opts ...CallOption) (json.RawMessage, error) {
	cargs, err := cJSON(args)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cargs))
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	return c.call(ctx, opts, func(cl *C.mcp_client, o *C.mcp_request_options) *C.mcp_result {
		return C.mcp_client_get_prompt(cl, cname, cargs, o)
	})
}

// Complete sends completion/complete: ref is e.g. {"type":"ref/prompt","name":"greet"},
// argument is {"name":...,"value":...}, completionContext is a JSON object or nil. The result
// is {"completion": {...}}.
func (c *Client) Complete(ctx context.Context, ref, argument, completionContext any, opts ...CallOption) (json.RawMessage, error) {
	cref, err := cJSON(ref)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cref))
	cargument, err := cJSON(argument)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cargument))
	ccontext, err := cJSON(completionContext)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(ccontext))
	return c.call(ctx, opts, func(cl *C.mcp_client, o *C.mcp_request_options) *C.mcp_result {
		return C.mcp_client_complete(cl, cref, cargument, ccontext, o)
	})
}

// Request sends any request by method name; params is a JSON object or nil. The result is
// the response's result.
func (c *Client) Request(ctx context.Context, method string, params any, opts ...CallOption) (json.RawMessage, error) {
	cparams, err := cJSON(params)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cparams))
	cmethod := C.CString(method)
	defer C.free(unsafe.Pointer(cmethod))
	return c.call(ctx, opts, func(cl *C.mcp_client, o *C.mcp_request_options) *C.mcp_result {
		return C.mcp_client_request(cl, cmethod, cparams, o)
	})
}

// SetLoggingLevel sends logging/setLevel, e.g. "debug" (handshake era only, else
// StatusNotSupported).
func (c *Client) SetLoggingLevel(ctx context.Context, level string, opts ...CallOption) error {
	clevel := C.CString(level)
	defer C.free(unsafe.Pointer(clevel))
	_, err := c.call(ctx, opts, func(cl *C.mcp_client, o *C.mcp_request_options) *C.mcp_result {
		return C.mcp_client_set_logging_level(cl, clevel, o)
	})
	return err
}

// One page of a list, from cursor ("" for the first page; the result's nextCursor gives the
// next), or every page at once. The all-pages methods stop at a repeated cursor and fail with
// StatusPaginationLimit past the client's page limit; ctx cancels the whole walk.

// ListTools sends one tools/list: {"tools": [...], "nextCursor"?}.
func (c *Client) ListTools(ctx context.Context, cursor string, opts ...CallOption) (json.RawMessage, error) {
	return c.listPage(ctx, cursor, opts, func(cl *C.mcp_client, cur *C.char, o *C.mcp_request_options) *C.mcp_result {
		return C.mcp_client_list_tools(cl, cur, o)
	})
}

// Tools lists every tool, over all pages: {"tools": [...]}.
func (c *Client) Tools(ctx context.Context, opts ...CallOption) (json.RawMessage, error) {
	return c.call(ctx, opts, func(cl *C.mcp_client, o *C.mcp_request_options) *C.mcp_result {
		return C.mcp_client_tools(cl, o)
	})
}

// ListResources sends one resources/list.
func (c *Client) ListResources(ctx context.Context, cursor string, opts ...CallOption) (json.RawMessage, error) {
	return c.listPage(ctx, cursor, opts, func(cl *C.mcp_client, cur *C.char, o *C.mcp_request_options) *C.mcp_result {
		return C.mcp_client_list_resources(cl, cur, o)
	})
}

// Resources lists every resource, over all pages: {"resources": [...]}.
func (c *Client) Resources(ctx context.Context, opts ...CallOption) (json.RawMessage, error) {
	return c.call(ctx, opts, func(cl *C.mcp_client, o *C.mcp_request_options) *C.mcp_result {
		return C.mcp_client_resources(cl, o)
	})
}

// ListResourceTemplates sends one resources/templates/list.
func (c *Client) ListResourceTemplates(ctx context.Context, cursor string, opts ...CallOption) (json.RawMessage, error) {
	return c.listPage(ctx, cursor, opts, func(cl *C.mcp_client, cur *C.char, o *C.mcp_request_options) *C.mcp_result {
		return C.mcp_client_list_resource_templates(cl, cur, o)
	})
}

// ResourceTemplates lists every resource template, over all pages:
// {"resourceTemplates": [...]}.
func (c *Client) ResourceTemplates(ctx context.Context, opts ...CallOption) (json.RawMessage, error) {
	return c.call(ctx, opts, func(cl *C.mcp_client, o *C.mcp_request_options) *C.mcp_result {
		return C.mcp_client_resource_templates(cl, o)
	})
}

// ListPrompts sends one prompts/list.
func (c *Client) ListPrompts(ctx context.Context, cursor string, opts ...CallOption) (json.RawMessage, error) {
	return c.listPage(ctx, cursor, opts, func(cl *C.mcp_client, cur *C.char, o *C.mcp_request_options) *C.mcp_result {
		return C.mcp_client_list_prompts(cl, cur, o)
	})
}

// Prompts lists every prompt, over all pages: {"prompts": [...]}.
func (c *Client) Prompts(ctx context.Context, opts ...CallOption) (json.RawMessage, error) {
	return c.call(ctx, opts, func(cl *C.mcp_client, o *C.mcp_request_options) *C.mcp_result {
		return C.mcp_client_prompts(cl, o)
	})
}

// Skills lists every skill the server serves (the Skills extension, skills/list over all
// pages): {"skills": [...]}, each entry a manifest of the skill's files with their digests.
// No file is read. StatusNotSupported when the server did not declare the extension.
func (c *Client) Skills(ctx context.Context, opts ...CallOption) (json.RawMessage, error) {
	return c.call(ctx, opts, func(cl *C.mcp_client, o *C.mcp_request_options) *C.mcp_result {
		return C.mcp_client_skills(cl, o)
	})
}

// ReadSkill reads one file of a skill and verifies it against skill, one entry of Skills'
// "skills". uri is the file ("" for the skill's SKILL.md) and must be listed in the entry.
// Content whose size or SHA-256 digest differs from the entry's, or a SKILL.md whose
// frontmatter differs from the entry's, is StatusProtocolError and is not returned.
func (c *Client) ReadSkill(ctx context.Context, skill json.RawMessage, uri string, opts ...CallOption) (json.RawMessage, error) {
	cskill, err := cJSON(skill)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cskill))
	curi := cString(uri)
	defer C.free(unsafe.Pointer(curi))
	return c.call(ctx, opts, func(cl *C.mcp_client, o *C.mcp_request_options) *C.mcp_result {
		return C.mcp_client_read_skill(cl, cskill, curi, o)
	})
}

func (c *Client) listPage(ctx context.Context, cursor string, opts []CallOption,
	list func(*C.mcp_client, *C.char, *C.mcp_request_options) *C.mcp_result) (json.RawMessage, error) {
	ccursor := cString(cursor)
	defer C.free(unsafe.Pointer(ccursor))
	return c.call(ctx, opts, func(cl *C.mcp_client, o *C.mcp_request_options) *C.mcp_result {
		return list(cl, ccursor, o)
	})
}

// What the server said about itself at Connect ("" or nil before).

// ServerInfo is the server's initialize (modern era: server/discover) result.
func (c *Client) ServerInfo() json.RawMessage {
	return optionalString(c.info(func(cl *C.mcp_client) *C.char { return C.mcp_client_server_info(cl) }))
}

// ServerImplementation is the server's {"name":...,"version":...}, in either era.
func (c *Client) ServerImplementation() json.RawMessage {
	return optionalString(c.info(func(cl *C.mcp_client) *C.char { return C.mcp_client_server_implementation(cl) }))
}

// ServerCapabilities is the server's capabilities object.
func (c *Client) ServerCapabilities() json.RawMessage {
	return optionalString(c.info(func(cl *C.mcp_client) *C.char { return C.mcp_client_server_capabilities(cl) }))
}

// ProtocolVersion is the negotiated protocol version, e.g. "2025-11-25".
func (c *Client) ProtocolVersion() string {
	return c.info(func(cl *C.mcp_client) *C.char { return C.mcp_client_protocol_version(cl) })
}

// Instructions are the server's instructions, "" when it gave none.
func (c *Client) Instructions() string {
	return c.info(func(cl *C.mcp_client) *C.char { return C.mcp_client_instructions(cl) })
}

func optionalString(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

// IsModern says whether the connection speaks the 2026-07-28 era (false before Connect).
func (c *Client) IsModern() bool {
	if !c.enter() {
		return false
	}
	defer c.calls.Done()
	return bool(C.mcp_client_is_modern(c.raw))
}
