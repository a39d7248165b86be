/*
 * progress: a progress bar driven by the progress callback, and timeouts that cancel.
 *
 *   progress SERVER [ARGS...]      (SERVER: mcpc-test-server, whose `slow` tool reports progress)
 *
 * The callback runs on the library's callback thread, never on the caller's, and gets the
 * userdata it was registered with. A timeout is a cancel with a reason: the call returns
 * MCP_STATUS_TIMEOUT and the server is told to stop.
 */
#include "mcpc.h"
#include "portable.h" /* threads and their names, clock, sleep: POSIX or Windows */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct bar {
    port_thread_id caller; /* the thread blocked in the call */
    int updates;       /* callbacks seen */
    int wrong_thread;  /* callbacks that ran on the caller's thread or an unnamed one */
};

static void fail(const char *what, const mcp_result *r) {
    fprintf(stderr, "progress: FAIL: %s (%s: %s)\n", what, mcp_status_name((int)mcp_result_status(r)),
            mcp_result_message(r));
    exit(1);
}

static void draw(void *userdata, const char *token_json, double progress, double total,
                 const char *message) {
    (void)token_json;
    (void)message;
    struct bar *bar = userdata;
    char name[32] = "";
    port_thread_name(name, sizeof name);
    if (port_thread_same(port_thread_self(), bar->caller) || strcmp(name, "mcpc-pool") != 0)
        bar->wrong_thread++;
    bar->updates++;
    int filled = total > 0 ? (int)(30.0 * progress / total) : 0;
    fprintf(stderr, "\r[%-30.*s] %3.0f/%-3.0f", filled, "##############################", progress,
            total);
}

static double now_ms(void) { return port_now_ms(); }

int main(int argc, char **argv) {
    if (argc < 2) {
        fputs("usage: progress SERVER [ARGS...]\n", stderr);
        return 2;
    }
    mcp_client *client = mcp_client_new_stdio((const char *const *)&argv[1], NULL);
    mcp_result *r = mcp_client_connect(client);
    if (mcp_result_status(r) != MCP_STATUS_OK)
        fail("connect", r);
    mcp_result_free(r);

    /* 1. A 1 s tool reporting progress every 50 ms draws a bar. */
    struct bar bar = {.caller = port_thread_self()};
    mcp_request_options *opts = mcp_request_options_new();
    mcp_request_options_set_progress_callback(opts, draw, &bar);
    r = mcp_client_call_tool(client, "slow", "{\"ms\":1000}", opts);
    fputc('\n', stderr);
    if (mcp_result_status(r) != MCP_STATUS_OK)
        fail("the slow call", r);
    mcp_result_free(r);
    mcp_request_options_free(opts);
    /* The last callbacks may still be queued when the call returns; they run in order soon. */
    for (int i = 0; i < 100 && bar.updates < 15; i++)
        port_sleep_ms(10);
    printf("progress: %d updates, all on the callback thread: %s\n", bar.updates,
           bar.wrong_thread == 0 ? "yes" : "no");
    if (bar.updates < 15 || bar.wrong_thread != 0) {
        fputs("progress: FAIL: expected at least 15 updates, each on mcpc-pool\n", stderr);
        return 1;
    }

    /* 2. A timeout cancels: 300 ms on a 5 s tool. */
    opts = mcp_request_options_new();
    mcp_request_options_set_timeout_ms(opts, 300);
    double start = now_ms();
    r = mcp_client_call_tool(client, "slow", "{\"ms\":5000}", opts);
    double took = now_ms() - start;
    if (mcp_result_status(r) != MCP_STATUS_TIMEOUT || took > 2000 ||
        strcmp(mcp_result_cancel_reason(r), "timed out after 300 ms") != 0)
        fail("expected a timeout after 300 ms", r);
    printf("timeout: returned after %.0f ms: %s\n", took, mcp_result_message(r));
    mcp_result_free(r);

    /* 3. Progress restarts the timeout, but never past the maximum total. */
    mcp_request_options_set_reset_timeout_on_progress(opts, true);
    mcp_request_options_set_max_total_timeout_ms(opts, 800);
    mcp_request_options_set_progress_callback(opts, draw, &bar);
    r = mcp_client_call_tool(client, "slow", "{\"ms\":5000}", opts);
    fputc('\n', stderr);
    if (mcp_result_status(r) != MCP_STATUS_TIMEOUT ||
        strcmp(mcp_result_cancel_reason(r), "exceeded the maximum of 800 ms") != 0)
        fail("expected the 800 ms maximum to end the call", r);
    printf("maximum: %s\n", mcp_result_message(r));
    mcp_result_free(r);

    mcp_request_options_free(opts);
    mcp_client_free(client);
    puts("ok");
    return 0;
}
