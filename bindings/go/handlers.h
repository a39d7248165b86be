/* Installs the Go request handlers and event callbacks of handlers.go and events.go (see
 * handlers.c). `handle` is the runtime/cgo.Handle of a client's *callbacks, the userdata. */
#ifndef MCPC_GO_HANDLERS_H
#define MCPC_GO_HANDLERS_H

#include <stdint.h>
#include "mcpc.h"

mcp_status mcpc_go_request_handler(mcp_client_options *options, const char *method,
                                   uintptr_t handle);
mcp_status mcpc_go_log(mcp_client_options *options, uintptr_t handle);
mcp_status mcpc_go_message(mcp_client_options *options, uintptr_t handle);
mcp_status mcpc_go_list_changed(mcp_client_options *options, uintptr_t handle);
mcp_status mcpc_go_resource_updated(mcp_client_options *options, uintptr_t handle);
mcp_status mcpc_go_trace(mcp_client_options *options, uintptr_t handle);

#endif
