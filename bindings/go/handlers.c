/* Trampolines from the library's handler and event callback types to the Go functions that
 * handlers.go and events.go export (cgo exports drop `const` and take the handle as an
 * integer; the casts live here). */
#include "handlers.h"
#include "_cgo_export.h"

static bool on_request(void *userdata, const char *method, const char *params_json,
                       mcp_handler_reply *reply) {
    return mcpcGoRequest((uintptr_t)userdata, (char *)method, (char *)params_json, reply);
}

static void on_log(void *userdata, mcp_log_level level, const char *message) {
    mcpcGoLog((uintptr_t)userdata, (int)level, (char *)message);
}

static void on_message(void *userdata, const char *level, const char *logger,
                       const char *data_json) {
    mcpcGoMessage((uintptr_t)userdata, (char *)level, (char *)logger, (char *)data_json);
}

static void on_list_changed(void *userdata, const char *kind) {
    mcpcGoListChanged((uintptr_t)userdata, (char *)kind);
}

static void on_resource_updated(void *userdata, const char *uri) {
    mcpcGoResourceUpdated((uintptr_t)userdata, (char *)uri);
}

static void on_trace(void *userdata, mcp_trace_direction direction, const char *transport,
                     const char *json) {
    mcpcGoTrace((uintptr_t)userdata, (int)direction, (char *)transport, (char *)json);
}

mcp_status mcpc_go_request_handler(mcp_client_options *options, const char *method,
                                   uintptr_t handle) {
    return mcp_client_options_set_request_handler(options, method, on_request, (void *)handle);
}

mcp_status mcpc_go_log(mcp_client_options *options, uintptr_t handle) {
    return mcp_client_options_set_log_callback(options, on_log, (void *)handle);
}

mcp_status mcpc_go_message(mcp_client_options *options, uintptr_t handle) {
    return mcp_client_options_set_message_callback(options, on_message, (void *)handle);
}

mcp_status mcpc_go_list_changed(mcp_client_options *options, uintptr_t handle) {
    return mcp_client_options_set_list_changed_callback(options, on_list_changed, (void *)handle);
}

mcp_status mcpc_go_resource_updated(mcp_client_options *options, uintptr_t handle) {
    return mcp_client_options_set_resource_updated_callback(options, on_resource_updated,
                                                            (void *)handle);
}

mcp_status mcpc_go_trace(mcp_client_options *options, uintptr_t handle) {
    return mcp_client_options_set_trace_callback(options, on_trace, (void *)handle);
}
