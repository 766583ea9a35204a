import Foundation
import Testing
import TollgateHTTP
import TollgateTesting

/// `limits.client-send-timeout` through the built executable: a client that stops reading a
/// response is closed, and what was being stored is stored all the same.
@Suite("client-send-timeout: a client that stops reading is closed (the built executable)", .serialized, .timeLimit(.minutes(1)), .enabled(if: tollgateBinary != nil))
struct ClientSendTimeoutTests {
    @Test("A client that reads none of an 8 MiB response is closed after the timeout, the log line says client-send-timeout, and the response is still stored for the next client")
    func stalledClientClosed() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let body = (0..<(8 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.send(status: 200, headers: ["Cache-Control": "max-age=600"], bytes: body)
        }
        defer { origin.stop() }
        let accessLog = directory.appendingPathComponent("access.log")
        let config = try writeForwardCacheConfiguration(
            in: directory,
            more: """
                limits:
                  client-send-timeout: 1s
                log:
                  access: "\(accessLog.path)"
                  format: json
                """
        )
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 1)
        defer { served.child.kill() }
        let port = try served.port("forward")
        let url = "http://127.0.0.1:\(origin.port)/large"
        let stalled = try await RawClient.connect(port: port, paused: true)
        defer { stalled.close() }
        try await stalled.send("GET \(url) HTTP/1.1\r\nHost: x\r\n\r\n")
        // The log line is written when the exchange ends: after the proxy gave up on the client.
        try await eventually("the stalled request's log line") {
            ((try? String(contentsOf: accessLog, encoding: .utf8)) ?? "").contains("\n")
        }
        let line = try #require(try String(contentsOf: accessLog, encoding: .utf8).split(separator: "\n").first)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["error"] as? String == "client-send-timeout", "\(line)")
        // Reading again, the client finds what its socket held and then the end: the response cut short.
        try await stalled.resumeReading()
        try await stalled.waitForClose(timeout: .seconds(10))
        #expect(stalled.receivedCount < body.count, "\(stalled.receivedCount) bytes")
        // The response was being stored when its client stopped reading: it is stored whole.
        try await eventuallyAsync("the response stored") {
            let again = try? await request("GET \(url) HTTP/1.1\r\nHost: x\r\n\r\n", port: port)
            return again?.header("Cache-Status") == "tollgate; hit" && again?.body == body
        }
        #expect(origin.requestCount == 1)
    }
}
