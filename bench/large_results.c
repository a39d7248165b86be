/*
 * What one large result costs the client at its peak (issue 36): one `tools/call` of the test
 * server's `oversized` tool, whose result is a text of S bytes, through the C API.
 *
 *   large_results stdio SERVER MIB          over stdio, handshake era
 *   large_results http-legacy SERVER MIB    one test server (--http), handshake era, SSE
 *   large_results http-json SERVER MIB      the same, the result as a JSON body (--http-json)
 *   large_results http-modern SERVER MIB    the same, modern era (--modern), SSE
 *
 * One call per process, so that no earlier call's buffers, kept by the allocator, hide part of
 * this one's. After connecting and one small call (whatever the first call allocates once is
 * not the result's), the high-water mark is reset to the resident size (writing "5" to
 * /proc/self/clear_refs, Linux 4.0 and later) and VmRSS read; after the call, and before its
 * result is freed, VmHWM minus that VmRSS is the peak growth. Output: one `key=value` line,
 * read by bench/table.py:
 *
 *   impl=mcpc case=large.TRANSPORT.MIB peak_mib=GROWTH ratio=GROWTH_OVER_S
 */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/wait.h>

#include "../include/mcpc.h"
#include "common.h"

static void check(mcp_result *result, const char *what) {
    if (mcp_result_status(result) != MCP_STATUS_OK) {
        fprintf(stderr, "large_results: %s failed: status %d: %s\n", what,
                mcp_result_status(result),
                mcp_result_message(result) ? mcp_result_message(result) : "");
        exit(1);
    }
}

static long status_kib(const char *field) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long value = -1;
    if (!f) die("large_results: no /proc/self/status (Linux only)");
    size_t len = strlen(field);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, field, len) == 0) value = atol(line + len);
    fclose(f);
    if (value < 0) die("large_results: no such field in /proc/self/status");
    return value;
}

/* Resets VmHWM to the current resident size. */
static void reset_peak(void) {
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f || fputs("5", f) < 0 || fclose(f) != 0)
        die("large_results: cannot reset VmHWM through /proc/self/clear_refs");
}

/* Calls `oversized` for `bytes` bytes and returns the length of the result's JSON; the result
 * is freed only after `peak_kib` has read the high-water mark. */
static size_t call_oversized(mcp_client *client, size_t bytes, long *peak_kib) {
    char arguments[64];
    snprintf(arguments, sizeof arguments, "{\"bytes\":%zu}", bytes);
    mcp_result *result = mcp_client_call_tool(client, "oversized", arguments, NULL);
    if (peak_kib) *peak_kib = status_kib("VmHWM:");
    check(result, "the call");
    size_t length = strlen(mcp_result_json(result));
    mcp_result_free(result);
    return length;
}

int main(int argc, char **argv) {
    if (argc != 4) die("usage: large_results stdio|http-legacy|http-json|http-modern SERVER MIB");
    const char *transport = argv[1], *server = argv[2];
    long mib = atol(argv[3]);
    if (mib <= 0) die("large_results: MIB must be at least 1");
    bool stdio = strcmp(transport, "stdio") == 0;
    bool modern = strcmp(transport, "http-modern") == 0;
    bool json = strcmp(transport, "http-json") == 0;
    if (!stdio && !modern && !json && strcmp(transport, "http-legacy") != 0)
        die("large_results: unknown transport");
    signal(SIGPIPE, SIG_IGN);

    char url[256];
    int to_server = -1;
    pid_t server_pid = 0;
    if (!stdio) {
        const char *flags[] = {modern ? "--modern" : json ? "--http-json" : NULL, NULL};
        server_pid = spawn_http_server_with(server, flags, url, &to_server);
    }
    mcp_client_options *options = mcp_client_options_new();
    mcp_client_options_set_mode(options,
                                modern ? MCP_CONNECT_MODE_MODERN : MCP_CONNECT_MODE_LEGACY);
    const char *server_argv[] = {server, NULL};
    mcp_client *client =
        stdio ? mcp_client_new_stdio(server_argv, options) : mcp_client_new_http(url, options);
    mcp_result *connected = mcp_client_connect(client);
    check(connected, "connect");
    mcp_result_free(connected);
    call_oversized(client, 1024, NULL);

    size_t bytes = (size_t)mib << 20;
    long before_kib = status_kib("VmRSS:");
    reset_peak();
    long peak_kib;
    size_t length = call_oversized(client, bytes, &peak_kib);
    if (length < bytes) die("large_results: the result is shorter than asked");
    double growth_mib = (peak_kib - before_kib) / 1024.0;
    printf("impl=mcpc case=large.%s.%ld peak_mib=%.1f ratio=%.2f\n", transport, mib,
           growth_mib, growth_mib / (double)mib);
    fflush(stdout);

    mcp_client_close(client);
    mcp_client_free(client);
    mcp_client_options_free(options);
    if (!stdio) {
        close(to_server);
        waitpid(server_pid, NULL, 0);
    }
    return 0;
}
