# The tests of a Windows build (included by CMakeLists.txt when cross-building with
# cmake/mingw-w64.cmake), run under Wine through CMAKE_CROSSCOMPILING_EMULATOR. Each is the
# Linux test of the same name, on the Windows library, programs and test server: the stdio
# transport (CreateProcess, pipes, the Job object), cancel, precancel, timeout, progress and
# the exit codes of mcp-call.

mcpc_test(mcp_call_echo mcp-call
  ${CHECK} 0 "\"text\":\"hello from ctest\"" -
  @PROG@ --call echo --args "{\"text\":\"hello from ctest\"}" --stdio "${SERVER}")
mcpc_test(mcp_call_list_tools mcp-call
  ${CHECK} 0 "\"name\":\"echo\"" -
  @PROG@ --list-tools --stdio "${SERVER}")
mcpc_test(mcp_call_unknown_tool mcp-call
  ${CHECK} 1 "{\"code\":-32602,\"message\":\"Unknown tool: nope\"}" -
  @PROG@ --call nope --stdio "${SERVER}")
mcpc_test(mcp_call_bad_args mcp-call
  ${CHECK} 2 - "INVALID_ARGUMENT"
  @PROG@ --call echo --args "{not json" --stdio "${SERVER}")
mcpc_test(mcp_call_no_program mcp-call
  ${CHECK} 5 - "TRANSPORT_ERROR"
  @PROG@ --ping --stdio "${CMAKE_CURRENT_BINARY_DIR}/no/such/program.exe")
mcpc_test(mcp_call_cancel mcp-call
  ${SH} "${TESTS_DIR}/mcp_call_cancel.sh" @PROG@ "${SERVER}")
mcpc_test(mcp_call_precancel mcp-call
  ${SH} "${TESTS_DIR}/mcp_call_precancel.sh" @PROG@ "${SERVER}")
mcpc_test(mcp_call_timeout mcp-call
  ${SH} "${TESTS_DIR}/mcp_call_timeout.sh" @PROG@ "${SERVER}")
mcpc_test(mcp_call_progress mcp-call
  ${CHECK} 0 "\"text\":\"done\"" "\"progress\":3,\"total\":3,\"message\":\"step 3\""
  @PROG@ --call progress --args "{\"steps\":3}" --progress --stdio "${SERVER}")
mcpc_test(mcp_call_precancel_no_reason mcp-call
  ${CHECK} 3 - "cancelled: request 0 (no reason)"
  @PROG@ --precancel --ping --stdio "${SERVER}")
# A directory as a Windows path in a file URI: Wine shows the Linux root as drive Z:, so the
# build directory is file:///Z:/<its path>. (No brackets in the strings: CMake lists count them.)
mcpc_test(mcp_call_roots mcp-call
  ${CHECK} 0 "\\\"uri\\\":\\\"file:///Z:${CMAKE_CURRENT_BINARY_DIR}\\\"}" -
  @PROG@ --roots "${CMAKE_CURRENT_BINARY_DIR}" --call ask_client
         --args "{\"method\":\"roots/list\"}" --stdio "${SERVER}")
