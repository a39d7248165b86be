/*
 * cancel: the cancellation pattern.
 *
 *   cancel SERVER [ARGS...]
 *
 * SERVER must be mcpc-test-server (or accept its `--log FILE` flag and `slow` tool): cancel
 * appends `--log <temporary file>` to its arguments and reads that log to see what the server
 * was sent.
 *
 * A worker thread blocks in a long tool call; the main thread cancels it through a token, as
 * a UI thread would when the user presses "cancel". The worker wakes at once with
 * MCP_STATUS_CANCELLED, and the library tells the server (notifications/cancelled) afterwards,
 * without making anyone wait for that write.
 */
#include "mcpc.h"
#include "portable.h" /* threads, clock, sleep, temporary file: POSIX or Windows */

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REASON "user pressed cancel"

static void fail(const char *fmt, const char *detail) {
    fprintf(stderr, "cancel: FAIL: ");
    fprintf(stderr, fmt, detail);
    fputc('\n', stderr);
    exit(1);
}

static double now_ms(void) { return port_now_ms(); /* monotonic: immune to clock changes */ }
static void sleep_ms(long ms) { port_sleep_ms(ms); }

/* ---- The worker: one blocking call -------------------------------------------------- */

struct worker {
    mcp_client *client;
    const mcp_request_options *options; /* carries the token */
    mcp_result *result;
    double returned_ms;
};

static void *worker_main(void *arg) {
    struct worker *w = arg;
    /* 10 s: far longer than the test, so only the cancel can end it early. */
    w->result = mcp_client_call_tool(w->client, "slow", "{\"ms\":10000}", w->options);
    w->returned_ms = now_ms();
    return NULL;
}

/* ---- Reading the server's log ------------------------------------------------------- */

/* The whole file as a string (the caller frees it); "" if it cannot be read. */
static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    size_t size = 0, cap = 4096;
    char *text = malloc(cap);
    if (text == NULL)
        fail("%s", "out of memory");
    if (f != NULL) {
        size_t n;
        while ((n = fread(text + size, 1, cap - size - 1, f)) > 0) {
            size += n;
            if (cap - size < 2) {
                char *bigger = realloc(text, cap *= 2);
                if (bigger == NULL)
                    fail("%s", "out of memory");
                text = bigger;
            }
        }
        fclose(f);
    }
    text[size] = '\0';
    return text;
}

/* Whether `line` (up to `end`) has `"key":<value>` for some occurrence of key. */
static bool has_int(const char *line, const char *end, const char *key, int64_t value) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":%" PRId64, key, value);
    size_t len = strlen(pattern);
    for (const char *p = line; (p = strstr(p, pattern)) != NULL && p < end; p++) {
        char next = p[len];
        if (next < '0' || next > '9') /* "id":2 must not match "id":23 */
            return true;
    }
    return false;
}

static bool has_text(const char *line, const char *end, const char *needle) {
    const char *p = strstr(line, needle);
    return p != NULL && p < end;
}

/* What the log says about request `id`. */
struct log_facts {
    int request_line;  /* line number of the tools/call with that id, or -1 */
    int cancel_line;   /* line number of the first notifications/cancelled, or -1 */
    int cancels;       /* notifications/cancelled lines, for any id */
    bool cancel_is_ours; /* the first cancel names `id` and carries REASON */
};

static struct log_facts examine_log(const char *path, int64_t id) {
    struct log_facts facts = {-1, -1, 0, false};
    char *text = read_file(path);
    int number = 0;
    for (const char *line = text; *line; number++) {
        const char *end = strchr(line, '\n');
        if (end == NULL)
            end = line + strlen(line); /* a line still being written; it counts as is */
        if (has_text(line, end, "\"method\":\"tools/call\"") && has_int(line, end, "id", id))
            facts.request_line = number;
        if (has_text(line, end, "\"method\":\"notifications/cancelled\"")) {
            if (facts.cancels++ == 0) {
                facts.cancel_line = number;
                facts.cancel_is_ours = has_int(line, end, "requestId", id) &&
                                       has_text(line, end, "\"reason\":\"" REASON "\"");
            }
        }
        line = *end ? end + 1 : end;
    }
    free(text);
    return facts;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: cancel SERVER [ARGS...]\n");
        return 2;
    }

    /* The server writes every line it reads to this file. */
    char log_path[4096];
    if (!port_temp_file(log_path, sizeof log_path, "mcpc-cancel"))
        fail("%s", "cannot create a temporary file");

    /* SERVER [ARGS...] --log FILE, NULL-terminated. */
    const char **server_argv = calloc((size_t)argc + 2, sizeof *server_argv);
    if (server_argv == NULL)
        fail("%s", "out of memory");
    for (int i = 1; i < argc; i++)
        server_argv[i - 1] = argv[i];
    server_argv[argc - 1] = "--log";
    server_argv[argc] = log_path;

    mcp_client *client = mcp_client_new_stdio(server_argv, NULL);
    mcp_result *result = mcp_client_connect(client);
    if (mcp_result_status(result) != MCP_STATUS_OK)
        fail("connect failed: %s", mcp_result_message(result));
    mcp_result_free(result);
    printf("connected to %s (server log: %s)\n", argv[1], log_path);

    /* One token per operation the user may cancel; the request options carry it. */
    mcp_cancellation *token = mcp_cancellation_new();
    mcp_request_options *options = mcp_request_options_new();
    mcp_request_options_set_cancellation(options, token);

    struct worker worker = {client, options, NULL, 0};
    port_thread thread;
    if (!port_thread_start(&thread, worker_main, &worker))
        fail("%s", "cannot start the worker thread");
    printf("worker: calling slow (10 s)...\n");

    sleep_ms(200); /* the user thinks it over */
    double cancelled_ms = now_ms();
    bool first = mcp_cancellation_cancel(token, REASON);
    printf("main: cancelled after 200 ms (\"%s\")\n", REASON);
    port_thread_join(thread);

    /* The worker must have woken with CANCELLED, the reason, and the id of its request. */
    mcp_status status = mcp_result_status(worker.result);
    const char *reason = mcp_result_cancel_reason(worker.result);
    int64_t id = mcp_result_request_id(worker.result);
    double latency = worker.returned_ms - cancelled_ms;
    printf("worker: the call returned %s %.1f ms after the cancel (request %" PRId64
           ", reason \"%s\")\n",
           mcp_status_name((int)status), latency, id, reason ? reason : "(none)");
    if (status != MCP_STATUS_CANCELLED)
        fail("the call returned %s, not CANCELLED", mcp_status_name((int)status));
    if (reason == NULL || strcmp(reason, REASON) != 0)
        fail("the cancel reason is %s", reason ? reason : "NULL");
    if (latency >= 1000.0)
        fail("%s", "the call took over 1 s to return after the cancel");
    if (id == 0)
        fail("%s", "the request id is 0, but the request was sent");
    mcp_result_free(worker.result);

    /* Only the first cancel counts; it is the one whose reason the server gets. */
    if (!first)
        fail("%s", "the first mcp_cancellation_cancel returned false");
    if (mcp_cancellation_cancel(token, "again"))
        fail("%s", "a second mcp_cancellation_cancel returned true");
    printf("main: the second cancel returned false, as it should\n");

    /* The client goes on working: the cancelled call's response (if the server ever sends
     * one) must never be mistaken for this one's. */
    result = mcp_client_call_tool(client, "echo", "{\"text\":\"still here\"}", NULL);
    if (mcp_result_status(result) != MCP_STATUS_OK)
        fail("echo after the cancel failed: %s", mcp_result_message(result));
    if (strstr(mcp_result_json(result), "still here") == NULL)
        fail("echo after the cancel returned %s", mcp_result_json(result));
    printf("main: echo after the cancel: %s\n", mcp_result_json(result));
    mcp_result_free(result);

    /* The notice is written after the caller wakes, so give it a moment to reach the log. */
    struct log_facts facts = examine_log(log_path, id);
    for (double start = now_ms(); facts.cancels == 0 && now_ms() - start < 2000;) {
        sleep_ms(10);
        facts = examine_log(log_path, id);
    }

    /* Closing ends the server, so the log is complete when we read it again. */
    mcp_client_close(client);
    mcp_client_free(client);
    mcp_request_options_free(options);
    mcp_cancellation_free(token);
    free(server_argv);

    facts = examine_log(log_path, id);
    if (facts.request_line < 0)
        fail("%s", "the server log has no tools/call line with the request id");
    if (facts.cancels != 1)
        fail("the server log has %s notifications/cancelled lines, not one",
             facts.cancels == 0 ? "no" : "several");
    if (!facts.cancel_is_ours)
        fail("%s", "the notifications/cancelled line lacks the request id or the reason");
    if (facts.cancel_line < facts.request_line)
        fail("%s", "the server read the cancel before the request");
    printf("server log: request %" PRId64 " (line %d), then one notifications/cancelled for it "
           "with the reason (line %d)\n",
           id, facts.request_line + 1, facts.cancel_line + 1);
    remove(log_path);
    puts("ok");
    return 0;
}
