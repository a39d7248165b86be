/* Installs the Go callbacks of callbacks.go (see callbacks.c). `handle` is a runtime/cgo.Handle
 * of a client's *callbacks; `key` names one call's progress func. Either is the userdata. */
#ifndef MCPC_GO_CALLBACKS_H
#define MCPC_GO_CALLBACKS_H

#include <stdint.h>
#include "mcpc.h"

mcp_status mcpc_go_client_progress(mcp_client_options *options, uintptr_t handle);
mcp_status mcpc_go_call_progress(mcp_request_options *options, uintptr_t key);
mcp_status mcpc_go_notification(mcp_client_options *options, uintptr_t handle);
mcp_status mcpc_go_stderr(mcp_client_options *options, uintptr_t handle);
mcp_status mcpc_go_state(mcp_client_options *options, uintptr_t handle);
mcp_status mcpc_go_start(mcp_client *client, const mcp_request *request,
                         const mcp_request_options *options, uintptr_t handle);

#endif
