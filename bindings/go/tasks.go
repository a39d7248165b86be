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

// WithTasks declares the tasks extension (io.modelcontextprotocol/tasks, 2026-07-28 era): the
// server may answer CallTool with a task. The call then polls the task to its end and returns
// its result as if it had been plain (a failed task is the call's StatusServerError, one the
// server cancelled StatusCancelled); status changes reach the progress funcs ("working: step
// 2/3"); input the task asks for goes to the request handlers. Cancelling the call's context
// (or its timeout) returns at once and sends the server one tasks/cancel for the task; the
// error's Data is then {"taskId": ...}. On a 2025-11-25 connection it drives that era's
// experimental tasks where the server offers them, for tools listed with
// execution.taskSupport optional or required (list the tools first).
func WithTasks() Option {
	return withSetter("tasks", func(o *C.mcp_client_options) C.mcp_status {
		return C.mcp_client_options_set_tasks(o, true)
	})
}

// CallReturnTask makes a call answered with a task return the task itself (resultType "task",
// taskId...) instead of polling it; drive it with GetTask, UpdateTask and CancelTask.
func CallReturnTask() CallOption {
	return func(c *callConfig) { c.returnTask = true }
}

// GetTask sends tasks/get: the task now (status, statusMessage, and result, error or
// inputRequests as its status has them).
func (c *Client) GetTask(ctx context.Context, taskID string, opts ...CallOption) (json.RawMessage, error) {
	cid := C.CString(taskID)
	defer C.free(unsafe.Pointer(cid))
	return c.call(ctx, opts, func(cl *C.mcp_client, o *C.mcp_request_options) *C.mcp_result {
		return C.mcp_client_get_task(cl, cid, o)
	})
}

// UpdateTask sends tasks/update: answers to the task's inputRequests, an object keyed as they
// are.
func (c *Client) UpdateTask(ctx context.Context, taskID string, inputResponses any, opts ...CallOption) (json.RawMessage, error) {
	cresponses, err := cJSON(inputResponses)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cresponses))
	cid := C.CString(taskID)
	defer C.free(unsafe.Pointer(cid))
	return c.call(ctx, opts, func(cl *C.mcp_client, o *C.mcp_request_options) *C.mcp_result {
		return C.mcp_client_update_task(cl, cid, cresponses, o)
	})
}

// CancelTask sends tasks/cancel and waits for the server's acknowledgement (cancellation is
// cooperative: the task may still end otherwise).
func (c *Client) CancelTask(ctx context.Context, taskID string, opts ...CallOption) (json.RawMessage, error) {
	cid := C.CString(taskID)
	defer C.free(unsafe.Pointer(cid))
	return c.call(ctx, opts, func(cl *C.mcp_client, o *C.mcp_request_options) *C.mcp_result {
		return C.mcp_client_cancel_task(cl, cid, o)
	})
}
