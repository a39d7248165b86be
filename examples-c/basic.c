/*
 * basic: the smallest complete use of mcpc.
 *
 *   basic SERVER [ARGS...]
 *
 * Starts SERVER as an MCP server on stdio, prints what it says about itself, lists its tools,
 * calls `echo` and `add`, and closes. Any unexpected status makes it exit non-zero, so it
 * doubles as a test against mcpc-test-server.
 */
#include "mcpc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every request returns a non-NULL result; this checks it succeeded and hands back its JSON.
 * On failure it says why and exits (the OS reclaims the client and the server is killed when
 * its stdin closes, so an example may skip the cleanup on this path). */
static const char *expect_ok(mcp_result *result, const char *what) {
    mcp_status status = mcp_result_status(result);
    if (status != MCP_STATUS_OK) {
        fprintf(stderr, "basic: %s failed: %s: %s\n", what, mcp_status_name((int)status),
                mcp_result_message(result));
        exit(1);
    }
    return mcp_result_json(result); /* owned by the result: valid until it is freed */
}

static void expect_contains(const char *json, const char *needle, const char *what) {
    if (strstr(json, needle) == NULL) {
        fprintf(stderr, "basic: %s: expected %s in %s\n", what, needle, json);
        exit(1);
    }
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: basic SERVER [ARGS...]\n");
        return 2;
    }
    printf("mcpc %s (built against %s)\n", mcp_version(), MCPC_VERSION);

    /* argv + 1 is NULL-terminated (argv[argc] is NULL), exactly what the library wants.
     * NULL options: the defaults. Nothing runs until connect. */
    mcp_client *client = mcp_client_new_stdio((const char *const *)(argv + 1), NULL);

    /* connect starts the server and performs the initialize handshake. */
    mcp_result *result = mcp_client_connect(client);
    expect_ok(result, "connect");
    mcp_result_free(result);
    /* These strings belong to the client and stay valid until it is freed. */
    printf("server: %s\n", mcp_client_server_info(client));
    printf("protocol version: %s\n", mcp_client_protocol_version(client));

    /* Every tool, however many pages the server splits them into. NULL request options:
     * no token, no timeout. */
    result = mcp_client_tools(client, NULL);
    const char *tools = expect_ok(result, "tools");
    printf("tools: %s\n", tools);
    expect_contains(tools, "\"name\":\"echo\"", "tools");
    mcp_result_free(result);

    result = mcp_client_call_tool(client, "echo", "{\"text\":\"hello\"}", NULL);
    const char *echoed = expect_ok(result, "echo");
    printf("echo: %s\n", echoed);
    expect_contains(echoed, "hello", "echo");
    mcp_result_free(result);

    result = mcp_client_call_tool(client, "add", "{\"a\":2,\"b\":3}", NULL);
    const char *sum = expect_ok(result, "add");
    printf("add: %s\n", sum);
    expect_contains(sum, "\"sum\":5", "add");
    mcp_result_free(result);

    /* close ends the session (the server's stdin is closed, then it is reaped); free would
     * do it too, but closing first is what a program with other threads would do. */
    mcp_client_close(client);
    mcp_client_free(client);
    puts("ok");
    return 0;
}
