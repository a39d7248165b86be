// Runs the binding against the project's test server (MCPC_TEST_SERVER, set by
// bindings/swift/test.sh): real calls, a task cancelled mid-call, close with calls pending,
// and many calls in flight without a thread each.
import CMcpc
import Foundation
import Mcpc
import XCTest

final class ClientTests: XCTestCase {
    /// A client of the test server; with `log`, the server writes every message it receives
    /// there, one JSON line each.
    private func connected(log: String? = nil) async throws -> Client {
        let server = try XCTUnwrap(ProcessInfo.processInfo.environment["MCPC_TEST_SERVER"])
        let client = Client(stdio: [server] + (log.map { ["--log", $0] } ?? []))
        let hello = try await client.connect()
        XCTAssertTrue(hello.contains("mcpc-test-server"), hello)
        return client
    }

    func testRequestsReturnTheServersResults() async throws {
        let client = try await connected()
        try await client.ping()
        let tools = try await client.tools()
        XCTAssertTrue(tools.contains(#""name":"echo""#), tools)
        let echoed = try await client.callTool("echo", arguments: #"{"text":"héllo from Swift"}"#)
        XCTAssertTrue(echoed.contains("héllo from Swift"), echoed)
        let sum = try await client.callTool("add", arguments: #"{"a":2,"b":40}"#)
        XCTAssertTrue(sum.contains("42"), sum)
        client.close()
    }

    func testBadInputThrowsWithAClearStatus() async throws {
        let client = try await connected()
        do {
            _ = try await client.callTool("echo", arguments: "{not json")
            XCTFail("invalid arguments were accepted")
        } catch let error as MCPError {
            XCTAssertEqual(error.status, MCP_STATUS_INVALID_ARGUMENT)
            XCTAssertTrue(error.message.contains("not valid JSON"), error.message)
        }
        do {
            _ = try await client.callTool("no-such-tool")
            XCTFail("an unknown tool succeeded")
        } catch let error as MCPError {
            XCTAssertEqual(error.status, MCP_STATUS_SERVER_ERROR, error.description)
            XCTAssertNotEqual(error.code, 0)
        }
        // The client goes on working.
        let echoed = try await client.callTool("echo", arguments: #"{"text":"still here"}"#)
        XCTAssertTrue(echoed.contains("still here"))
        client.close()
    }

    func testCancellingTheTaskCancelsTheCallAtOnceAndTellsTheServer() async throws {
        let log = temporaryPath()
        let client = try await connected(log: log)
        let call = Task { try await client.callTool("never") }
        // Long enough for the request to be on the wire.
        try await Task.sleep(nanoseconds: 300_000_000)
        let cancelledAt = Date()
        call.cancel()
        var requestID: Int64 = 0
        do {
            _ = try await call.value
            XCTFail("a cancelled call returned a result")
        } catch let error as MCPError {
            XCTAssertTrue(error.isCancelled, error.description)
            XCTAssertEqual(error.cancelReason, "task cancelled")
            XCTAssertGreaterThan(error.requestID, 0, "the request was sent, so it has an id")
            requestID = error.requestID
        }
        let took = Date().timeIntervalSince(cancelledAt)
        XCTAssertLessThan(took, 2.0, "the cancel took \(took) s")
        // The server is told, once, for that request, with the reason.
        let notice = try waitForLog(log, "notifications/cancelled") { line in
            line["method"] as? String == "notifications/cancelled"
        }
        let params = notice["params"] as? [String: Any]
        XCTAssertEqual((params?["requestId"] as? NSNumber)?.int64Value, requestID)
        XCTAssertEqual(params?["reason"] as? String, "task cancelled")
        let echoed = try await client.callTool("echo", arguments: #"{"text":"after"}"#)
        XCTAssertTrue(echoed.contains("after"))
        client.close()
    }

    func testATaskCancelledBeforeItsCallStartsNeverSendsIt() async throws {
        let log = temporaryPath()
        let client = try await connected(log: log)
        let call = Task {
            // Cancelled while it sleeps: the call starts with its token already cancelled.
            try? await Task.sleep(nanoseconds: 200_000_000)
            return try await client.callTool("never")
        }
        call.cancel()
        do {
            _ = try await call.value
            XCTFail("a cancelled call returned a result")
        } catch let error as MCPError {
            XCTAssertTrue(error.isCancelled, error.description)
            XCTAssertEqual(error.requestID, 0, "nothing was sent")
        }
        // A ping after it reaches the server; the call never did.
        try await client.ping()
        _ = try waitForLog(log, "ping") { $0["method"] as? String == "ping" }
        let calls = logLines(log).filter { $0["method"] as? String == "tools/call" }
        XCTAssertTrue(calls.isEmpty, "the server was sent \(calls)")
        client.close()
    }

    func testCloseEndsPendingCallsWithClosed() async throws {
        let client = try await connected()
        let calls = (0..<4).map { _ in Task { try await client.callTool("never") } }
        try await Task.sleep(nanoseconds: 300_000_000)
        client.close()
        for call in calls {
            do {
                _ = try await call.value
                XCTFail("a call outlived close")
            } catch let error as MCPError {
                XCTAssertEqual(error.status, MCP_STATUS_CLOSED, error.description)
            }
        }
    }

    /// 64 calls in flight at once: the library's threads do not grow with them (no thread is
    /// parked per call), and every call gets its own answer (each sleeps its own time).
    func testManyCallsInFlightParkNoThreadEach() async throws {
        let client = try await connected()
        try await client.ping()
        let before = threadCount()
        let results = try await withThrowingTaskGroup(of: (Int, String).self) { group in
            for i in 0..<64 {
                group.addTask {
                    let text = try await client.callTool(
                        "slow", arguments: #"{"ms":\#(400 + i)}"#)
                    return (i, text)
                }
            }
            try await Task.sleep(nanoseconds: 200_000_000)
            let during = threadCount()
            XCTAssertLessThan(during - before, 16, "\(before) threads before, \(during) during")
            var all: [(Int, String)] = []
            for try await result in group { all.append(result) }
            return all
        }
        XCTAssertEqual(results.count, 64)
        for (i, text) in results {
            XCTAssertTrue(text.contains("slept \(400 + i) ms"), "call \(i): \(text)")
        }
        client.close()
    }

    private func temporaryPath() -> String {
        NSTemporaryDirectory() + "mcpc-swift-\(UUID().uuidString).log"
    }

    private func logLines(_ path: String) -> [[String: Any]] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    /// The first line of the server's log that `match` takes, waiting up to 5 s for it.
    private func waitForLog(
        _ path: String, _ what: String, _ match: ([String: Any]) -> Bool
    ) throws -> [String: Any] {
        let deadline = Date().addingTimeInterval(5)
        while true {
            if let line = logLines(path).first(where: match) { return line }
            if Date() > deadline {
                let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
                XCTFail("the server's log has no \(what); it has:\n\(text)")
                throw NotInLog(what: what)
            }
            Thread.sleep(forTimeInterval: 0.01)
        }
    }

    private struct NotInLog: Error {
        let what: String
    }

    private func threadCount() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("Threads:") }
        return Int(line?.split(separator: "\t").last ?? "") ?? -1
    }
}
