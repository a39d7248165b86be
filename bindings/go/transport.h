/* The vtable of a Go Transport (transport.go): trampolines to its exported functions, with a
 * runtime/cgo.Handle of the Transport as userdata. */
#ifndef MCPC_GO_TRANSPORT_H
#define MCPC_GO_TRANSPORT_H

#include <stdint.h>
#include "mcpc.h"

mcp_client *mcpc_go_new_custom(uintptr_t handle, const mcp_client_options *options);
void mcpc_go_sent(mcp_on_sent on_sent, void *sent_ctx);

#endif
