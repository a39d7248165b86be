#include "transport.h"
#include "_cgo_export.h"

static bool send_request(void *userdata, const char *request_json, mcp_on_sent on_sent,
                         void *sent_ctx, mcp_transport_reply *reply) {
    return mcpcGoSendRequest((uintptr_t)userdata, (char *)request_json, on_sent, sent_ctx, reply);
}

static bool send_notification(void *userdata, const char *notification_json) {
    return mcpcGoSendNotification((uintptr_t)userdata, (char *)notification_json);
}

static void close_transport(void *userdata) {
    mcpcGoCloseTransport((uintptr_t)userdata);
}

mcp_client *mcpc_go_new_custom(uintptr_t handle, const mcp_client_options *options) {
    mcp_transport_vtable vtable = {send_request, send_notification, close_transport};
    return mcp_client_new_custom(&vtable, (void *)handle, options); /* the vtable is copied */
}

void mcpc_go_sent(mcp_on_sent on_sent, void *sent_ctx) {
    on_sent(sent_ctx);
}
