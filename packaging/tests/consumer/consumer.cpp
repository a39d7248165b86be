// The same from C++: the header's extern "C" block makes the names link. Given a server
// (consumer_cxx SERVER [ARGS...]), it also connects and calls its `echo` tool.
#include <mcpc.h>

#include <iostream>
#include <memory>
#include <string>

namespace {

struct ClientFree {
    void operator()(mcp_client *client) const { mcp_client_free(client); }
};
struct ResultFree {
    void operator()(mcp_result *result) const { mcp_result_free(result); }
};
using Result = std::unique_ptr<mcp_result, ResultFree>;

bool call_echo(char **server) {
    std::unique_ptr<mcp_client, ClientFree> client(
        mcp_client_new_stdio(const_cast<const char *const *>(server), nullptr));
    Result connected(mcp_client_connect(client.get()));
    if (mcp_result_status(connected.get()) != MCP_STATUS_OK) {
        std::cerr << "connect: " << mcp_result_message(connected.get()) << "\n";
        return false;
    }
    Result echoed(mcp_client_call_tool(client.get(), "echo", "{\"text\":\"hello from C++\"}", nullptr));
    if (mcp_result_status(echoed.get()) != MCP_STATUS_OK) {
        std::cerr << "echo: " << mcp_result_message(echoed.get()) << "\n";
        return false;
    }
    const std::string json = mcp_result_json(echoed.get());
    std::cout << "echo: " << json << "\n";
    return json.find("hello from C++") != std::string::npos;
}

} // namespace

int main(int argc, char **argv) {
    const std::string version = mcp_version();
    const std::string cancelled = mcp_status_name(MCP_STATUS_CANCELLED);
    std::cout << "mcpc " << version << " from C++, " << cancelled << "\n";
    if (version != MCPC_VERSION || cancelled != "CANCELLED") {
        return 1;
    }
    return argc < 2 || call_echo(argv + 1) ? 0 : 1;
}
