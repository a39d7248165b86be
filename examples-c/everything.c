/*
 * everything: host callbacks and handlers, written in C, against
 * @modelcontextprotocol/server-everything (a server nobody here wrote).
 *
 *   everything --stdio PROGRAM [ARG...]
 *   everything --http URL
 *
 * It registers C handlers for roots/list, sampling/createMessage and elicitation/create (so
 * the client declares those capabilities), and callbacks for progress, list changes and log
 * messages, then checks:
 * - trigger-long-running-operation's progress reaches the progress callback, in order, with
 *   the callback's userdata, on the library's callback thread;
 * - get-roots-list, trigger-sampling-request and trigger-elicitation-request are answered by
 *   the C handlers (each tool's result quotes what the handler said);
 * - the server's unsolicited list_changed and its simulated log messages reach their callbacks;
 * - a second client that declares sampling but has no handler for it answers -32601, and the
 *   tool reports that error.
 */
#define _GNU_SOURCE /* pthread_getname_np */
#include "mcpc.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failures;

static void check(int ok, const char *what) {
    printf("%s %s\n", ok ? "ok  " : "FAIL", what);
    failures += !ok;
}

/* What the callbacks saw; each callback gets a pointer to this as its userdata. */
struct seen {
    pthread_mutex_t lock;
    double last_progress;
    int progress_updates, progress_out_of_order, wrong_thread;
    int list_changes, log_messages, handler_calls, updates;
};

static int on_callback_thread(void) {
    char name[32] = "";
    pthread_getname_np(pthread_self(), name, sizeof name);
    return strcmp(name, "mcpc-pool") == 0;
}

static void on_progress(void *userdata, const char *token, double progress, double total,
                        const char *message) {
    (void)token, (void)total, (void)message;
    struct seen *s = userdata;
    pthread_mutex_lock(&s->lock);
    s->progress_out_of_order += progress <= s->last_progress;
    s->last_progress = progress;
    s->progress_updates++;
    s->wrong_thread += !on_callback_thread();
    pthread_mutex_unlock(&s->lock);
}

static void on_list_changed(void *userdata, const char *kind) {
    (void)kind;
    struct seen *s = userdata;
    pthread_mutex_lock(&s->lock);
    s->list_changes++;
    s->wrong_thread += !on_callback_thread();
    pthread_mutex_unlock(&s->lock);
}

static void on_message(void *userdata, const char *level, const char *logger, const char *data) {
    (void)level, (void)logger, (void)data;
    struct seen *s = userdata;
    pthread_mutex_lock(&s->lock);
    s->log_messages++;
    pthread_mutex_unlock(&s->lock);
}

static void on_updated(void *userdata, const char *uri) {
    struct seen *s = userdata;
    pthread_mutex_lock(&s->lock);
    s->updates += strstr(uri, "demo://resource/") != NULL;
    pthread_mutex_unlock(&s->lock);
}

/* The handlers answer with recognisable text, which the tools quote back. */
static bool on_request(void *userdata, const char *method, const char *params_json,
                       mcp_handler_reply *reply) {
    (void)params_json;
    struct seen *s = userdata;
    pthread_mutex_lock(&s->lock);
    s->handler_calls++;
    pthread_mutex_unlock(&s->lock);
    if (strcmp(method, "roots/list") == 0)
        return mcp_handler_reply_set_result(
            reply, "{\"roots\":[{\"uri\":\"file:///mcpc-root\",\"name\":\"mcpc-root\"}]}");
    if (strcmp(method, "sampling/createMessage") == 0)
        return mcp_handler_reply_set_result(
            reply, "{\"role\":\"assistant\",\"content\":{\"type\":\"text\",\"text\":\"sampled by "
                   "mcpc\"},\"model\":\"mcpc-model\",\"stopReason\":\"endTurn\"}");
    if (strcmp(method, "elicitation/create") == 0)
        return mcp_handler_reply_set_result(reply, "{\"action\":\"decline\"}");
    mcp_handler_reply_set_error(reply, -32601, "not handled here");
    return false;
}

static mcp_client *make_client(char **argv, const mcp_client_options *opts) {
    if (strcmp(argv[1], "--http") == 0)
        return mcp_client_new_http(argv[2], opts);
    return mcp_client_new_stdio((const char *const *)&argv[2], opts);
}

/* Calls a tool and returns its result JSON (malloc'd) or NULL. */
static char *call(mcp_client *client, const char *tool, const char *args,
                  const mcp_request_options *opts) {
    mcp_result *r = mcp_client_call_tool(client, tool, args, opts);
    char *json = NULL;
    if (mcp_result_status(r) == MCP_STATUS_OK)
        json = strdup(mcp_result_json(r));
    else
        printf("     %s: %s: %s\n", tool, mcp_status_name((int)mcp_result_status(r)),
               mcp_result_message(r));
    mcp_result_free(r);
    return json;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv) {
    if (argc < 3 || (strcmp(argv[1], "--stdio") != 0 && strcmp(argv[1], "--http") != 0)) {
        fputs("usage: everything --stdio PROGRAM [ARG...] | --http URL\n", stderr);
        return 2;
    }
    struct seen seen = {.lock = PTHREAD_MUTEX_INITIALIZER};
    mcp_client_options *opts = mcp_client_options_new();
    mcp_client_options_set_request_handler(opts, "roots/list", on_request, &seen);
    mcp_client_options_set_request_handler(opts, "sampling/createMessage", on_request, &seen);
    mcp_client_options_set_request_handler(opts, "elicitation/create", on_request, &seen);
    mcp_client_options_set_list_changed_callback(opts, on_list_changed, &seen);
    mcp_client_options_set_message_callback(opts, on_message, &seen);
    mcp_client_options_set_resource_updated_callback(opts, on_updated, &seen);
    mcp_client *client = make_client(argv, opts);
    mcp_client_options_free(opts);
    mcp_result *r = mcp_client_connect(client);
    check(mcp_result_status(r) == MCP_STATUS_OK, "connect");
    mcp_result_free(r);

    /* Progress: 5 steps of 100 ms. */
    mcp_request_options *progress = mcp_request_options_new();
    mcp_request_options_set_progress_callback(progress, on_progress, &seen);
    char *json = call(client, "trigger-long-running-operation", "{\"duration\":0.5,\"steps\":5}",
                      progress);
    mcp_request_options_free(progress);
    check(json != NULL, "trigger-long-running-operation answers");
    free(json);
    sleep_ms(200); /* the last callbacks may trail the response */
    pthread_mutex_lock(&seen.lock);
    check(seen.progress_updates == 5 && seen.progress_out_of_order == 0,
          "five progress updates, in order");
    pthread_mutex_unlock(&seen.lock);

    json = call(client, "get-roots-list", NULL, NULL);
    check(json != NULL && strstr(json, "file:///mcpc-root") != NULL, "get-roots-list shows our root");
    free(json);
    json = call(client, "trigger-sampling-request", "{\"prompt\":\"hi\",\"maxTokens\":10}", NULL);
    check(json != NULL && strstr(json, "sampled by mcpc") != NULL,
          "trigger-sampling-request shows our sample");
    free(json);
    json = call(client, "trigger-elicitation-request", NULL, NULL);
    check(json != NULL && strstr(json, "decline") != NULL,
          "trigger-elicitation-request shows our answer");
    free(json);

    /* Unsolicited notifications: simulated log messages, and updates of a subscribed resource,
     * which the server sends every few seconds once switched on. */
    free(call(client, "toggle-simulated-logging", NULL, NULL));
    r = mcp_client_subscribe_resource(client, "demo://resource/static/document/architecture.md", NULL);
    check(mcp_result_status(r) == MCP_STATUS_OK, "resources/subscribe");
    mcp_result_free(r);
    free(call(client, "toggle-subscriber-updates", NULL, NULL));
    for (int i = 0; i < 150; i++) {
        pthread_mutex_lock(&seen.lock);
        int got = seen.log_messages > 0 && seen.updates > 0;
        pthread_mutex_unlock(&seen.lock);
        if (got)
            break;
        sleep_ms(100);
    }
    pthread_mutex_lock(&seen.lock);
    check(seen.log_messages > 0, "log messages reach the message callback");
    check(seen.updates > 0, "resource updates reach their callback");
    /* The server announces list changes once, right at startup: on stdio they arrive; over
     * HTTP it sends them before any stream exists to carry them, so there they are lost. */
    if (strcmp(argv[1], "--stdio") == 0)
        check(seen.list_changes > 0, "unsolicited list_changed reaches its callback");
    check(seen.handler_calls >= 3, "the C handlers answered");
    check(seen.wrong_thread == 0, "callbacks ran on the callback thread");
    pthread_mutex_unlock(&seen.lock);
    mcp_client_free(client);

    /* A client that declares sampling but handles nothing: -32601 goes back, the tool says so. */
    opts = mcp_client_options_new();
    mcp_client_options_set_capabilities(opts, "{\"sampling\":{}}");
    client = make_client(argv, opts);
    mcp_client_options_free(opts);
    r = mcp_client_connect(client);
    mcp_result_free(r);
    json = call(client, "trigger-sampling-request", "{\"prompt\":\"hi\",\"maxTokens\":10}", NULL);
    check(json != NULL && strstr(json, "-32601") != NULL, "an unhandled request gets -32601");
    free(json);
    mcp_client_free(client);

    printf("%s\n", failures == 0 ? "ok" : "FAILED");
    return failures == 0 ? 0 : 1;
}
