/* Trampolines from the library's callback types to the Go functions exported by callbacks.go.
 * They exist because cgo exports drop `const` and take the handle as an integer: the casts
 * live here, in C, rather than as uintptr-to-pointer conversions in Go. */
#include "callbacks.h"
#include "_cgo_export.h"

static void on_progress(void *userdata, const char *token_json, double progress, double total,
                        const char *message) {
    mcpcGoProgress((uintptr_t)userdata, (char *)token_json, progress, total, (char *)message);
}

static void on_call_progress(void *userdata, const char *token_json, double progress,
                             double total, const char *message) {
    mcpcGoCallProgress((uintptr_t)userdata, (char *)token_json, progress, total, (char *)message);
}

static void on_notification(void *userdata, const char *method, const char *params_json) {
    mcpcGoNotification((uintptr_t)userdata, (char *)method, (char *)params_json);
}

static void on_completion(void *userdata, uint64_t tag, mcp_result *result) {
    (void)tag;
    mcpcGoCompletion((uintptr_t)userdata, result);
}

static void on_stderr(void *userdata, const char *line) {
    mcpcGoStderr((uintptr_t)userdata, (char *)line);
}

static void on_state(void *userdata, mcp_connection_state state) {
    mcpcGoState((uintptr_t)userdata, (int)state);
}

mcp_status mcpc_go_client_progress(mcp_client_options *options, uintptr_t handle) {
    return mcp_client_options_set_progress_callback(options, on_progress, (void *)handle);
}

mcp_status mcpc_go_call_progress(mcp_request_options *options, uintptr_t key) {
    return mcp_request_options_set_progress_callback(options, on_call_progress, (void *)key);
}

mcp_status mcpc_go_notification(mcp_client_options *options, uintptr_t handle) {
    return mcp_client_options_set_notification_callback(options, on_notification, (void *)handle);
}

mcp_status mcpc_go_stderr(mcp_client_options *options, uintptr_t handle) {
    return mcp_client_options_set_stderr_callback(options, on_stderr, (void *)handle);
}

mcp_status mcpc_go_state(mcp_client_options *options, uintptr_t handle) {
    return mcp_client_options_set_state_callback(options, on_state, (void *)handle);
}

mcp_status mcpc_go_start(mcp_client *client, const mcp_request *request,
                         const mcp_request_options *options, uintptr_t handle) {
    return mcp_client_start_callback(client, request, options, on_completion, (void *)handle, 0);
}
