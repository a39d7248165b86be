// The same from C++: the header's extern "C" block makes the names link.
#include <mcpc.h>

#include <iostream>
#include <string>

int main() {
    const std::string version = mcp_version();
    const std::string cancelled = mcp_status_name(MCP_STATUS_CANCELLED);
    std::cout << "mcpc " << version << " from C++, " << cancelled << "\n";
    return version == MCPC_VERSION && cancelled == "CANCELLED" ? 0 : 1;
}
