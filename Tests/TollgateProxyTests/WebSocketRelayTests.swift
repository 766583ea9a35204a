import Foundation
import NIOCore
import Testing
import TollgateHTTP
import TollgatePolicy
import TollgateProxy
import TollgateSession
import TollgateTesting

/// Limits with a small WebSocket message size (and idle timeout, when given).
private func limited(maxMessage: Int = 1000, idle: Duration? = nil) -> PolicyConfiguration {
    var configuration = PolicyConfiguration()
    configuration.limits.websocketMaxMessage = maxMessage
    if let idle { configuration.limits.websocketIdleTimeout = idle }
    return configuration
}

/// The `websocket` object of the last JSON access log line.
private func webSocketLogged(_ proxy: ProxyFixture) throws -> [String: Any] {
    let line = try #require(proxy.accessLog.last)
    let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    #expect(object["status"] as? Int == 101)
    #expect(object["tunnel"] is NSNull, "a WebSocket connection is logged as websocket only")
    return try #require(object["websocket"] as? [String: Any], "no websocket object in \(line)")
}

/// A masked client frame.
private func clientFrame(_ opcode: UInt8, _ payload: [UInt8]) -> [UInt8] {
    let mask: [UInt8] = [0x11, 0x22, 0x33, 0x44]
    let length: [UInt8] = payload.count < 126 ? [0x80 | UInt8(payload.count)] : [0xFE, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
    return [0x80 | opcode] + length + mask + payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
}

private let handshake =
    "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"

@Suite(
    "The WebSocket relay with Python's websockets on both sides",
    .serialized,
    .timeLimit(.minutes(1)),
    .enabled(if: WebSocketPeer.python != nil, "python3 with the websockets package is not installed")
)
struct WebSocketRelayTests {
    @Test("Messages, a ping and the client's close code and reason pass unchanged; the log line counts them")
    func reverseEchoAndClientClose() async throws {
        let server = try await WebSocketPeer.startServer()
        defer { server.stop() }
        let upstream = HTTPURL(string: "http://127.0.0.1:\(server.port)")!
        try await withProxy(configuration: limited(), mode: .reverse(upstream: upstream), logFormat: .json) { proxy in
            let run = try await WebSocketPeer.runClient(
                uri: "ws://127.0.0.1:\(proxy.port)/echo", messages: ["hello", "ping", "bytes:500", "close:4001:client done"]
            )
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout == "reply hello\npong\nreply 500 bytes\nclosed 4001 client done\n")
            try await eventually("the server saw the close") { server.closes == ["closed 4001 client done"] }
            try await eventually("the access log line") { !proxy.accessLog.isEmpty }
            let logged = try webSocketLogged(proxy)
            #expect(logged["messages_to_upstream"] as? Int == 2)
            #expect(logged["bytes_to_upstream"] as? Int == 505)
            #expect(logged["messages_to_client"] as? Int == 2)
            #expect(logged["bytes_to_client"] as? Int == 505)
            #expect(logged["close_code"] as? Int == 4001)
            #expect(logged["closed_by"] as? String == "client")
        }
    }

    @Test("permessage-deflate passes through: agreed end to end, its messages relayed compressed and counted as they travel")
    func compressedRelay() async throws {
        let server = try await WebSocketPeer.startServer(compression: .deflate)
        defer { server.stop() }
        let upstream = HTTPURL(string: "http://127.0.0.1:\(server.port)")!
        // 180 000 characters that compress to a few hundred bytes: under the relay's 1000-byte limit.
        try await withProxy(configuration: limited(), mode: .reverse(upstream: upstream), logFormat: .json) { proxy in
            let session = Session(configuration: .ephemeral)
            defer { session.invalidateAndCancel() }
            let task = try session.webSocketTask(with: HTTPURL(string: "ws://127.0.0.1:\(proxy.port)/echo")!)
            task.maximumMessageSize = 1 << 20
            task.resume()
            try await task.send(.string("extensions?"))
            #expect(try await task.receive() == .string("permessage-deflate; server_max_window_bits=12; client_max_window_bits=12"))
            #expect(task.usesCompression)
            let text = String(repeating: "through the relay ", count: 10_000)
            try await task.send(.string(text))
            #expect(try await task.receive() == .string(text))
            task.cancel(with: .normalClosure, reason: nil)
            try await eventually("the access log line") { !proxy.accessLog.isEmpty }
            let logged = try webSocketLogged(proxy)
            #expect(logged["messages_to_upstream"] as? Int == 2)
            #expect((logged["bytes_to_upstream"] as? Int ?? .max) < 1000, "\(logged)")
            #expect(logged["close_code"] as? Int == 1000)
        }
    }

    @Test("The server's close code and reason reach the client unchanged")
    func serverClosePassesThrough() async throws {
        let server = try await WebSocketPeer.startServer()
        defer { server.stop() }
        let upstream = HTTPURL(string: "http://127.0.0.1:\(server.port)")!
        try await withProxy(mode: .reverse(upstream: upstream), logFormat: .json) { proxy in
            let run = try await WebSocketPeer.runClient(uri: "ws://127.0.0.1:\(proxy.port)/echo", messages: ["say:close:4002:server done"])
            #expect(run.stdout.hasSuffix("closed 4002 server done\n"), "\(run.stdout) \(run.stderr)")
            try await eventually("the access log line") { !proxy.accessLog.isEmpty }
            let logged = try webSocketLogged(proxy)
            #expect(logged["close_code"] as? Int == 4002)
            #expect(logged["closed_by"] as? String == "upstream")
        }
    }

    @Test("A message over websocket-max-message closes both sides with 1009, either way")
    func oversizeClosesBothSides() async throws {
        let server = try await WebSocketPeer.startServer()
        defer { server.stop() }
        let upstream = HTTPURL(string: "http://127.0.0.1:\(server.port)")!
        try await withProxy(configuration: limited(), mode: .reverse(upstream: upstream), logFormat: .json) { proxy in
            // Client to server.
            let up = try await WebSocketPeer.runClient(uri: "ws://127.0.0.1:\(proxy.port)/echo", messages: ["small", "bytes:5000"])
            #expect(up.stdout == "reply small\nclosed 1009 \n", "\(up.stderr)")
            try await eventually("the server saw 1009") { server.closes == ["closed 1009 "] }
            try await eventually("the access log line") { proxy.accessLog.count == 1 }
            var logged = try webSocketLogged(proxy)
            #expect(logged["close_code"] as? Int == 1009)
            #expect(logged["closed_by"] as? String == "proxy")
            #expect(logged["messages_to_upstream"] as? Int == 1)
            // Server to client.
            let down = try await WebSocketPeer.runClient(uri: "ws://127.0.0.1:\(proxy.port)/echo", messages: ["big:5000"])
            #expect(down.stdout == "closed 1009 \n", "\(down.stderr)")
            try await eventually("the server saw 1009 again") { server.closes == ["closed 1009 ", "closed 1009 "] }
            try await eventually("the second access log line") { proxy.accessLog.count == 2 }
            logged = try webSocketLogged(proxy)
            #expect(logged["close_code"] as? Int == 1009)
            #expect(logged["messages_to_client"] as? Int == 0)
        }
    }

    @Test("A forward proxy relays an absolute-form upgrade frame by frame, and its own 1009 is a well-formed close frame")
    func forwardRawFrames() async throws {
        let server = try await WebSocketPeer.startServer()
        defer { server.stop() }
        try await withProxy(configuration: limited(), logFormat: .json) { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            try await client.send("GET http://127.0.0.1:\(server.port)/echo HTTP/1.1\r\nHost: 127.0.0.1\r\n" + handshake)
            try await client.waitUntil("the 101", timeout: .seconds(10)) { $0.text.contains("\r\n\r\n") }
            #expect(client.responses.first?.status == 101)
            let headLength = client.received.count
            try await client.send(clientFrame(0x1, Array("hi".utf8)))
            try await client.waitUntil("the echo", timeout: .seconds(10)) { $0.received.count >= headLength + 4 }
            #expect(Array(client.received[headLength...]) == [0x81, 0x02] + Array("hi".utf8))
            try await client.send(clientFrame(0x2, Array(repeating: 1, count: 2000)))
            try await client.waitForClose()
            #expect(Array(client.received[(headLength + 4)...]) == [0x88, 0x02, 0x03, 0xF1])
            try await eventually("the server saw 1009") { server.closes == ["closed 1009 "] }
        }
    }

    @Test("No frame either way for websocket-idle-timeout closes both sides with 1001")
    func idleTimeout() async throws {
        let server = try await WebSocketPeer.startServer()
        defer { server.stop() }
        try await withProxy(configuration: limited(idle: .milliseconds(300)), logFormat: .json) { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            // Before the request: the relay (and its idle wait) starts after it, and a loaded
            // machine may show this client the 101 well after the relay began.
            let started = ContinuousClock.now
            try await client.send("GET http://127.0.0.1:\(server.port)/echo HTTP/1.1\r\nHost: 127.0.0.1\r\n" + handshake)
            try await client.waitUntil("the 101", timeout: .seconds(10)) { $0.text.contains("\r\n\r\n") }
            let headLength = client.received.count
            try await client.waitForClose()
            #expect(ContinuousClock.now - started >= .milliseconds(250))
            #expect(Array(client.received[headLength...]) == [0x88, 0x02, 0x03, 0xE9])
            try await eventually("the server saw 1001") { server.closes == ["closed 1001 "] }
            try await eventually("the access log line") { !proxy.accessLog.isEmpty }
            #expect(try webSocketLogged(proxy)["closed_by"] as? String == "proxy")
        }
    }
}
