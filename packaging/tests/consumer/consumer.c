/* A program built against an installed mcpc: prints the library's version and checks that the
 * header it was compiled with and the library it runs with agree, and that a call works. */
#include <mcpc.h>

#include <stdio.h>
#include <string.h>

int main(void) {
    mcp_cancellation *token = mcp_cancellation_new();
    bool first = mcp_cancellation_cancel(token, "consumer");
    bool again = mcp_cancellation_cancel(token, "consumer");
    mcp_cancellation_free(token);

    printf("mcpc %s (built against %s)\n", mcp_version(), MCPC_VERSION);
    return strcmp(mcp_version(), MCPC_VERSION) == 0 && first && !again ? 0 : 1;
}
