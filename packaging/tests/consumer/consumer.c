/* A program built against an installed mcpc: prints the library's version and checks that the
 * header it was compiled with and the library it runs with agree, and that a cancellation token
 * works. Given a server (consumer SERVER [ARGS...]), it also starts it on stdio, connects and
 * calls its `echo` tool. */
#include <mcpc.h>

#include <stdio.h>
#include <string.h>

static int call_echo(char **server) {
    mcp_client *client = mcp_client_new_stdio((const char *const *)server, NULL);
    mcp_result *result = mcp_client_connect(client);
    int ok = mcp_result_status(result) == MCP_STATUS_OK;
    mcp_result_free(result);
    if (ok) {
        result = mcp_client_call_tool(client, "echo", "{\"text\":\"hello from C\"}", NULL);
        ok = mcp_result_status(result) == MCP_STATUS_OK &&
             strstr(mcp_result_json(result), "hello from C") != NULL;
        printf("echo: %s\n", ok ? mcp_result_json(result) : mcp_result_message(result));
        mcp_result_free(result);
    }
    mcp_client_free(client);
    return ok;
}

int main(int argc, char **argv) {
    mcp_cancellation *token = mcp_cancellation_new();
    bool first = mcp_cancellation_cancel(token, "consumer");
    bool again = mcp_cancellation_cancel(token, "consumer");
    mcp_cancellation_free(token);

    printf("mcpc %s (built against %s)\n", mcp_version(), MCPC_VERSION);
    if (strcmp(mcp_version(), MCPC_VERSION) != 0 || !first || again) {
        return 1;
    }
    return argc < 2 || call_echo(argv + 1) ? 0 : 1;
}
