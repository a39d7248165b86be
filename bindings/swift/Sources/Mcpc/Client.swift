// A thin async wrapper over the completion API (tested by bindings/swift/test.sh): each
// request is started with mcp_client_start_callback and its continuation is resumed from the
// completion callback (on the client's completion thread), so no thread is parked per call.
// Cancelling the task cancels the call through an mcp_cancellation token, which also tells
// the server.
import CMcpc
import Foundation

/// A call that did not succeed: a local outcome (cancelled, timed out, closed...) or a JSON-RPC
/// error the server answered (`MCP_STATUS_SERVER_ERROR`, with `code`, `message` and `data`).
public struct MCPError: Error, CustomStringConvertible {
    public let status: mcp_status
    /// The JSON-RPC error code for `MCP_STATUS_SERVER_ERROR`, else 0.
    public let code: Int64
    public let message: String
    /// The JSON-RPC error's data, as JSON text.
    public let data: String?
    /// The id of the request when one was sent, to match the server's log; else 0.
    public let requestID: Int64
    /// Why the call was cancelled ("task cancelled"), or timed out ("timed out after N ms").
    public let cancelReason: String?

    public var isCancelled: Bool { status == MCP_STATUS_CANCELLED }

    public var statusName: String {
        String(cString: mcp_status_name(Int32(truncatingIfNeeded: status.rawValue)))
    }

    public var description: String {
        status == MCP_STATUS_SERVER_ERROR
            ? "mcpc: \(statusName) \(code): \(message)"
            : "mcpc: \(statusName): \(cancelReason ?? message)"
    }

    init(status: mcp_status, message: String) {
        self.status = status
        code = 0
        self.message = message
        data = nil
        requestID = 0
        cancelReason = nil
    }

    init(_ result: OpaquePointer?) {
        status = mcp_result_status(result)
        code = mcp_result_error_code(result)
        message = String(cString: mcp_result_message(result))
        data = mcp_result_error_data(result).map { String(cString: $0) }
        requestID = mcp_result_request_id(result)
        cancelReason = mcp_result_cancel_reason(result).map { String(cString: $0) }
    }
}

/// A client for one MCP server. Thread-safe: any number of tasks may make calls at once.
public final class Client: @unchecked Sendable {
    private let raw: OpaquePointer

    /// A client for a server run as a child process (`argv[0]` is looked up in PATH; no
    /// shell). Nothing starts until `connect()`.
    public init(stdio argv: [String]) {
        let cArgv: [UnsafePointer<CChar>?] = argv.map { UnsafePointer(strdup($0)) } + [nil]
        defer { cArgv.forEach { free(UnsafeMutablePointer(mutating: $0)) } }
        raw = mcp_client_new_stdio(cArgv, nil)
    }

    deinit {
        mcp_client_free(raw)
    }

    /// Ends the session: calls still running throw `MCP_STATUS_CLOSED` at once.
    public func close() {
        mcp_client_close(raw)
    }

    /// Starts the server and learns its protocol era; returns the server's initialize (or
    /// server/discover) result. Bounded by the connect timeout, not by task cancellation.
    @discardableResult
    public func connect() async throws -> String {
        try await onThread { try take(mcp_client_connect(self.raw)) }
    }

    public func ping() async throws {
        _ = try await call(mcp_request_ping())
    }

    /// Every tool, over all pages: `{"tools": [...]}`.
    public func tools() async throws -> String {
        try await call(mcp_request_tools())
    }

    /// One page of `tools/list`; the result's `nextCursor` gives the next.
    public func listTools(cursor: String? = nil) async throws -> String {
        try await call(withOptionalCString(cursor) { mcp_request_list_tools($0) })
    }

    /// `tools/call`; `arguments` is a JSON object. Returns the tool's result as JSON.
    public func callTool(_ name: String, arguments: String? = nil) async throws -> String {
        try await call(withOptionalCString(arguments) { mcp_request_call_tool(name, $0) })
    }

    /// `resources/read`: `{"contents": [...]}`.
    public func readResource(_ uri: String) async throws -> String {
        try await call(mcp_request_read_resource(uri))
    }

    /// `prompts/get`; `arguments` is a JSON object of strings.
    public func getPrompt(_ name: String, arguments: String? = nil) async throws -> String {
        try await call(withOptionalCString(arguments) { mcp_request_get_prompt(name, $0) })
    }

    /// Any request by method name; `params` is a JSON object.
    public func request(_ method: String, params: String? = nil) async throws -> String {
        try await call(withOptionalCString(params) { mcp_request_other(method, $0) })
    }

    /// Starts `request` (and frees it) with a token that cancelling the task cancels, and
    /// resumes when its completion arrives. A task cancelled before the start cancels the
    /// token first, and the library then sends nothing. Exactly one completion comes for a
    /// start that returned MCP_STATUS_OK (closing the client completes it with CLOSED), so
    /// the continuation is resumed exactly once.
    private func call(_ request: OpaquePointer?) async throws -> String {
        defer { mcp_request_free(request) }
        let token = Token()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let options: OpaquePointer = mcp_request_options_new()
                defer { mcp_request_options_free(options) }
                mcp_request_options_set_cancellation(options, token.raw)
                let box = Unmanaged.passRetained(Completion(continuation)).toOpaque()
                let status = mcp_client_start_callback(
                    self.raw, request, options, completionCallback, box, 0)
                if status != MCP_STATUS_OK {
                    // Not started: no completion will come.
                    Unmanaged<Completion>.fromOpaque(box).takeRetainedValue().continuation
                        .resume(throwing: MCPError(status: status, message: "not started"))
                }
            }
        } onCancel: {
            token.cancel("task cancelled")
        }
    }
}

/// The continuation of one started call, passed to the library as the callback's userdata.
private final class Completion {
    let continuation: CheckedContinuation<String, Error>

    init(_ continuation: CheckedContinuation<String, Error>) {
        self.continuation = continuation
    }
}

/// Runs on the client's completion thread: resumes the call's continuation with its result
/// (which it owns and frees).
private let completionCallback: mcp_completion_callback = { userdata, _, result in
    let completion = Unmanaged<Completion>.fromOpaque(userdata!).takeRetainedValue()
    completion.continuation.resume(with: Result { try take(result) })
}

/// Owns a token. The call's thread and the cancellation handler both hold it, so it is freed
/// only when neither can use it any more.
private final class Token: @unchecked Sendable {
    let raw: OpaquePointer = mcp_cancellation_new()

    func cancel(_ reason: String) {
        _ = mcp_cancellation_cancel(raw, reason)
    }

    deinit {
        mcp_cancellation_free(raw)
    }
}

/// Runs a blocking library call (connect, which has no completion form) on a thread of its
/// own, so that it never holds one of the concurrency runtime's few threads.
private func onThread<T>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread {
            continuation.resume(with: Result { try body() })
        }
    }
}

/// The result's JSON, or the error it carries; frees the result.
private func take(_ result: OpaquePointer?) throws -> String {
    defer { mcp_result_free(result) }
    guard mcp_result_status(result) == MCP_STATUS_OK else {
        throw MCPError(result)
    }
    return String(cString: mcp_result_json(result))
}

private func withOptionalCString<R>(_ string: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let string else { return body(nil) }
    return string.withCString { body($0) }
}
