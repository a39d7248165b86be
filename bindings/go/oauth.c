/* Trampolines from the library's OAuth callback types to the Go functions exported by
 * oauth.go (the casts live here, as in callbacks.c). */
#include "oauth.h"
#include "_cgo_export.h"

static bool on_authorize(void *userdata, const char *authorization_url, const char *redirect_uri,
                         mcp_auth_reply *reply) {
    return mcpcGoAuthorize((uintptr_t)userdata, (char *)authorization_url, (char *)redirect_uri,
                           reply);
}

static bool on_token_load(void *userdata, const char *server_url, const char *issuer,
                          mcp_token_slot *slot) {
    return mcpcGoTokenLoad((uintptr_t)userdata, (char *)server_url, (char *)issuer, slot);
}

static void on_token_save(void *userdata, const char *server_url, const char *issuer,
                          const char *tokens_json) {
    mcpcGoTokenSave((uintptr_t)userdata, (char *)server_url, (char *)issuer, (char *)tokens_json);
}

static bool on_headers(void *userdata, const char *url, mcp_header_list *headers) {
    return mcpcGoHeaders((uintptr_t)userdata, (char *)url, headers);
}

mcp_status mcpc_go_authorize(mcp_client_options *options, uintptr_t handle) {
    return mcp_client_options_set_oauth_authorize_callback(options, on_authorize, (void *)handle);
}

mcp_status mcpc_go_token_store(mcp_client_options *options, uintptr_t handle) {
    return mcp_client_options_set_oauth_token_store(options, on_token_load, on_token_save,
                                                    (void *)handle);
}

mcp_status mcpc_go_header_provider(mcp_client_options *options, uintptr_t handle) {
    return mcp_client_options_set_header_provider(options, on_headers, (void *)handle);
}

static size_t on_workload_token(void *userdata, char *buffer, size_t capacity) {
    return mcpcGoWorkloadToken((uintptr_t)userdata, buffer, capacity);
}

static size_t on_identity_assertion(void *userdata, char *buffer, size_t capacity) {
    return mcpcGoIdentityAssertion((uintptr_t)userdata, buffer, capacity);
}

mcp_status mcpc_go_workload_token(mcp_client_options *options, uintptr_t handle) {
    return mcp_client_options_set_oauth_workload_token_callback(options, on_workload_token,
                                                                (void *)handle);
}

mcp_status mcpc_go_identity_provider(mcp_client_options *options, const char *token_endpoint,
                                     const char *client_id, const char *client_secret,
                                     uintptr_t handle) {
    return mcp_client_options_set_oauth_identity_provider(
        options, token_endpoint, client_id, client_secret, on_identity_assertion, (void *)handle);
}

static size_t on_client_sign(void *userdata, const uint8_t *input, size_t length,
                             uint8_t *signature, size_t capacity) {
    return mcpcGoClientSign((uintptr_t)userdata, (uint8_t *)input, length, signature, capacity);
}

mcp_status mcpc_go_client_signer(mcp_client_options *options, const char *algorithm,
                                 const char *key_id, uintptr_t handle) {
    return mcp_client_options_set_oauth_client_signer(options, algorithm, key_id, on_client_sign,
                                                      (void *)handle);
}
