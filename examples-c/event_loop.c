/*
 * event_loop: the completion API from one thread, woken by the completion queue: poll() on its
 * descriptor (POSIX), WaitForSingleObject on its event object (Windows).
 *
 *   event_loop SERVER [ARGS...]
 *
 * SERVER must be mcpc-test-server (or have its `echo` and `slow` tools). One thread starts
 * many tool calls without blocking (one batch), tagged 0..N-1, and waits for their completions in a
 * loop on the completion queue's descriptor or event, as an event loop (libuv, GLib, Qt, epoll,
 * kqueue, a Windows message loop with MsgWaitForMultipleObjects) would. One more call, a slow one, is cancelled through its token while
 * pending and must complete once with MCP_STATUS_CANCELLED; another is pending when the
 * client is freed and must complete with MCP_STATUS_CLOSED before mcp_client_free returns.
 */
#include "mcpc.h"
#include "portable.h" /* <windows.h> on Windows */

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef _WIN32
#include <poll.h>
#endif

#define CALLS 32
#define CANCELLED_TAG 100
#define CLOSED_TAG 101

static void fail(const char *what, const char *detail) {
    fprintf(stderr, "event_loop: FAIL: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    exit(1);
}

/* Waits up to timeout_ms for the queue to say "pop now": true when its descriptor is readable
 * (its event object signaled, on Windows). An event loop would watch the same thing. */
static bool queue_signaled(mcp_completion_queue *queue, int timeout_ms) {
#ifdef _WIN32
    return WaitForSingleObject(mcp_completion_queue_event(queue), (DWORD)timeout_ms) == WAIT_OBJECT_0;
#else
    struct pollfd pfd = {.fd = mcp_completion_queue_fd(queue), .events = POLLIN};
    return poll(&pfd, 1, timeout_ms) == 1;
#endif
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: event_loop SERVER [ARGS...]\n");
        return 2;
    }
    mcp_client *client = mcp_client_new_stdio((const char *const *)(argv + 1), NULL);
    mcp_result *connected = mcp_client_connect(client);
    if (mcp_result_status(connected) != MCP_STATUS_OK) fail("connect", mcp_result_message(connected));
    mcp_result_free(connected);

    mcp_completion_queue *queue = mcp_completion_queue_new();
    if (!queue) fail("mcp_completion_queue_new", NULL);

    /* Many calls in flight from this one thread, started together: one batch, whose requests
     * leave in one write (mcp_client_start starts one). */
    const mcp_request *requests[CALLS];
    uint64_t tags[CALLS];
    for (uint64_t tag = 0; tag < CALLS; tag++) {
        char args[64];
        snprintf(args, sizeof args, "{\"text\":\"call %" PRIu64 "\"}", tag);
        requests[tag] = mcp_request_call_tool("echo", args);
        tags[tag] = tag;
    }
    size_t started = 0;
    if (mcp_client_start_batch(client, requests, NULL, queue, tags, CALLS, &started) != MCP_STATUS_OK ||
        started != CALLS)
        fail("start batch", NULL);
    /* The started calls do not need their requests. */
    for (int i = 0; i < CALLS; i++) mcp_request_free((mcp_request *)requests[i]);

    /* A slow call with a token, cancelled while pending. */
    mcp_cancellation *token = mcp_cancellation_new();
    mcp_request_options *options = mcp_request_options_new();
    mcp_request_options_set_cancellation(options, token);
    mcp_request *slow = mcp_request_call_tool("slow", "{\"ms\":30000}");
    if (mcp_client_start(client, slow, options, queue, CANCELLED_TAG) != MCP_STATUS_OK) fail("start slow", NULL);
    if (!mcp_cancellation_cancel(token, "not needed")) fail("first cancel returns true", NULL);

    int seen[CALLS] = {0};
    int done = 0, cancelled = 0;
    while (done < CALLS || !cancelled) {
        if (!queue_signaled(queue, 20000)) fail("no completion within 20 s", NULL);
        uint64_t tag;
        mcp_result *result;
        while (mcp_completion_queue_pop(queue, &tag, &result)) {
            if (tag == CANCELLED_TAG) {
                if (mcp_result_status(result) != MCP_STATUS_CANCELLED) fail("slow call", mcp_result_message(result));
                if (cancelled++) fail("the cancelled call completed twice", NULL);
            } else {
                if (tag >= CALLS) fail("unknown tag", NULL);
                if (mcp_result_status(result) != MCP_STATUS_OK) fail("echo", mcp_result_message(result));
                char want[64];
                snprintf(want, sizeof want, "call %" PRIu64, tag);
                if (!strstr(mcp_result_json(result), want)) fail("result of another call", mcp_result_json(result));
                if (seen[tag]++) fail("a call completed twice", NULL);
                done++;
            }
            mcp_result_free(result);
        }
    }
    if (queue_signaled(queue, 0)) fail("the queue stays signaled once it is found empty", NULL);

    /* Freed with a call pending: it completes with CLOSED before free returns. */
    if (mcp_client_start(client, slow, NULL, queue, CLOSED_TAG) != MCP_STATUS_OK) fail("start slow", NULL);
    mcp_client_free(client);
    uint64_t tag = 0;
    mcp_result *result = NULL;
    if (!mcp_completion_queue_pop(queue, &tag, &result)) fail("no completion after free", NULL);
    if (tag != CLOSED_TAG || mcp_result_status(result) != MCP_STATUS_CLOSED) fail("pending at free", mcp_result_message(result));
    mcp_result_free(result);
    if (mcp_completion_queue_pop(queue, &tag, &result)) fail("a second completion after free", NULL);

    mcp_request_free(slow);
    mcp_request_options_free(options);
    mcp_cancellation_free(token);
    mcp_completion_queue_free(queue);
    printf("event_loop: %d calls in flight from one thread, matched by tag; cancel and free completed once\n", CALLS);
    return 0;
}
