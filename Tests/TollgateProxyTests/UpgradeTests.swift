import Foundation
import NIOCore
import Testing
import TollgateHTTP
import TollgateProxy
import TollgateTesting

@Suite("Upgrades (WebSocket) relayed as a byte stream", .timeLimit(.minutes(1)))
struct UpgradeTests {
    /// An origin that switches to an echo after a 101, sending `early` right behind the 101.
    private func echoingOrigin() async throws -> LoopbackOrigin {
        try await LoopbackOrigin.start { request, respond in
            guard request.headerFields["Upgrade"] == "websocket" else {
                respond.send(status: 400, body: "no upgrade")
                return
            }
            respond.echoRawBytes()
            respond.write(
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    + "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\nearly"
            )
        }
    }

    private let upgradeHead =
        "Host: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        + "Sec-WebSocket-Version: 13\r\n\r\n"

    @Test("A WebSocket upgrade gets the 101, then bytes flow both ways, early bytes included")
    func websocketEcho() async throws {
        let origin = try await echoingOrigin()
        defer { origin.stop() }
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            try await client.send("GET http://127.0.0.1:\(origin.port)/ws HTTP/1.1\r\n" + upgradeHead)
            try await client.waitUntil("the 101 and the early bytes", timeout: .seconds(10)) {
                $0.text.hasSuffix("early")
            }
            let interim = try #require(client.responses.first)
            #expect(interim.status == 101)
            #expect(interim.header("Upgrade") == "websocket")
            #expect(interim.header("Connection") == "Upgrade")
            #expect(interim.header("Sec-WebSocket-Accept") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
            #expect(interim.headers("Via") == ["1.1 tollgate"])
            // A masked WebSocket text frame "ping", as a browser sends it: the proxy relays bytes.
            let frame: [UInt8] =
                [0x81, 0x84, 1, 2, 3, 4] + Array("ping".utf8).enumerated().map { $1 ^ UInt8($0 % 4 + 1) }
            try await client.send(frame)
            try await client.waitUntil("the echoed frame", timeout: .seconds(10)) {
                Array($0.received.suffix(frame.count)) == frame
            }
            let received = try #require(origin.requests.first)
            #expect(received.headerFields["Connection"] == "Upgrade")
            #expect(received.headerFields["Upgrade"] == "websocket")
            #expect(received.headerFields["Sec-WebSocket-Key"] == "dGhlIHNhbXBsZSBub25jZQ==")
            client.close()
            try await eventually("the upstream connection closes") { origin.openConnectionCount == 0 }
            try await eventually("the access log line") { !proxy.accessLog.isEmpty }
            #expect(proxy.accessLog.first?.contains("\" 101 ") == true)
        }
    }

    @Test("An upgrade the origin declines gets the origin's answer, then the connection closes")
    func declined() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "plain") }
        defer { origin.stop() }
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            try await client.send("GET http://127.0.0.1:\(origin.port)/ws HTTP/1.1\r\n" + upgradeHead)
            try await client.waitForClose()
            let response = try #require(client.responses.first)
            #expect(response.status == 200)
            #expect(response.bodyText == "plain")
            #expect(response.header("Connection") == "close")
        }
    }

    @Test("A 101 to a request that did not ask to upgrade is a protocol error (502)")
    func unaskedSwitch() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.write("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
        }
        defer { origin.stop() }
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            try await client.send("GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\n\r\n")
            let response = try #require(try await client.waitForResponses(1).first)
            #expect(response.status == 502)
            #expect(response.header("Tollgate-Error") == "upstream-protocol-error")
        }
    }

    @Test("A reverse listener relays a WebSocket upgrade to its upstream")
    func reverseUpgrade() async throws {
        let origin = try await echoingOrigin()
        defer { origin.stop() }
        try await withProxy(mode: .reverse(upstream: origin.url())) { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            try await client.send("GET /ws HTTP/1.1\r\n" + upgradeHead)
            try await client.waitUntil("the 101", timeout: .seconds(10)) { $0.text.hasSuffix("early") }
            try await client.send("echo me")
            try await client.waitUntil("the echo", timeout: .seconds(10)) { $0.text.hasSuffix("earlyecho me") }
            #expect(origin.requests.first?.path == "/ws")
        }
    }
}
