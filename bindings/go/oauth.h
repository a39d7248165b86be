/* Installs the Go OAuth callbacks of oauth.go (see oauth.c). `handle` is the runtime/cgo.Handle
 * of a client's *callbacks, the userdata of each. */
#ifndef MCPC_GO_OAUTH_H
#define MCPC_GO_OAUTH_H

#include <stdint.h>
#include "mcpc.h"

mcp_status mcpc_go_authorize(mcp_client_options *options, uintptr_t handle);
mcp_status mcpc_go_token_store(mcp_client_options *options, uintptr_t handle);
mcp_status mcpc_go_header_provider(mcp_client_options *options, uintptr_t handle);
mcp_status mcpc_go_client_signer(mcp_client_options *options, const char *algorithm,
                                 const char *key_id, uintptr_t handle);
mcp_status mcpc_go_workload_token(mcp_client_options *options, uintptr_t handle);
mcp_status mcpc_go_identity_provider(mcp_client_options *options, const char *token_endpoint,
                                     const char *client_id, const char *client_secret,
                                     uintptr_t handle);

#endif
