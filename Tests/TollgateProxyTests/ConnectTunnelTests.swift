import Foundation
import NIOCore
import NIOPosix
import Testing
import TollgatePolicy
import TollgateProxy
import TollgateSession
import TollgateTesting

@Suite("CONNECT tunnels", .timeLimit(.minutes(1)))
struct ConnectTunnelTests {
    private func allowing(ports: [Int]) -> PolicyConfiguration {
        var configuration = PolicyConfiguration()
        configuration.access.connectPorts = ports
        return configuration
    }

    @Test("A tunnel carries bytes both ways, and half-close goes through in each direction")
    func echoAndHalfClose() async throws {
        let echo = try await LoopbackEchoServer.start(farewell: "bye")
        defer { echo.stop() }
        try await withProxy(configuration: allowing(ports: [echo.port]), logFormat: .json) { proxy in
            let client = try await RawClient.connect(port: proxy.port, halfClosure: true)
            defer { client.close() }
            // Bytes right behind the head, in the same packet, go through the tunnel too.
            try await client.send(
                "CONNECT 127.0.0.1:\(echo.port) HTTP/1.1\r\nHost: 127.0.0.1:\(echo.port)\r\n\r\nearly "
            )
            try await client.waitUntil("the 200 and the echo", timeout: .seconds(10)) { $0.text.hasSuffix("early ") }
            #expect(client.text.hasPrefix("HTTP/1.1 200 Connection Established\r\n\r\n"))
            try await client.send("hello")
            try await client.waitUntil("the echo", timeout: .seconds(10)) { $0.text.hasSuffix("early hello") }
            #expect(!client.receivedEOF)
            // Our EOF reaches the server, which says goodbye and closes its side: we get both.
            try await client.shutdownOutput()
            try await client.waitUntil("the farewell and EOF", timeout: .seconds(10)) { $0.receivedEOF }
            #expect(client.text.hasSuffix("early hellobye"))
            #expect(echo.receivedBytes == Array("early hello".utf8))
            try await eventually("the access log line") { !proxy.accessLog.isEmpty }
            let line = try #require(proxy.accessLog.first)
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(object["method"] as? String == "CONNECT")
            #expect(object["status"] as? Int == 200)
            #expect(object["bytes"] as? Int == 14)
            let tunnel = try #require(object["tunnel"] as? [String: Any], "\(line)")
            #expect(tunnel["bytes_to_upstream"] as? Int == 11)
            #expect(tunnel["bytes_to_client"] as? Int == 14)
            #expect(tunnel["end"] as? String == "closed")
            #expect(object["websocket"] is NSNull)
            try await eventually("the stream task ends") { proxy.session.allTasks.isEmpty }
            #expect(proxy.server.configuration.metrics.exposition().contains("tollgate_tunnel_idle_closes_total 0\n"))
        }
    }

    @Test("A tunnel with no byte either way for limits.tunnel-idle-timeout is closed on both sides, logged and counted")
    func idleTunnelClosed() async throws {
        // That each byte puts the close off is tested event by event (StreamRelayTests.idleTimeout).
        let echo = try await LoopbackEchoServer.start()
        defer { echo.stop() }
        var configuration = allowing(ports: [echo.port])
        configuration.limits.tunnelIdleTimeout = .milliseconds(500)
        try await withProxy(configuration: configuration, logFormat: .json) { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            // Before the CONNECT: the echo, the relay's last byte, passes after it, and a loaded
            // machine may show it to this client well after the relay's wait began.
            let sent = ContinuousClock.now
            try await client.send("CONNECT 127.0.0.1:\(echo.port) HTTP/1.1\r\nHost: 127.0.0.1:\(echo.port)\r\n\r\nping")
            try await client.waitUntil("the 200 and the echo", timeout: .seconds(10)) { $0.text.hasSuffix("\r\n\r\nping") }
            try await client.waitForClose()
            #expect(ContinuousClock.now - sent >= .milliseconds(500))
            try await eventually("the access log line") { !proxy.accessLog.isEmpty }
            let line = try #require(proxy.accessLog.first)
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(object["bytes"] as? Int == 4)
            let tunnel = try #require(object["tunnel"] as? [String: Any], "\(line)")
            #expect(tunnel["bytes_to_upstream"] as? Int == 4)
            #expect(tunnel["end"] as? String == "idle-timeout")
            try await eventually("the stream task ends") { proxy.session.allTasks.isEmpty }
            #expect(proxy.server.configuration.metrics.exposition().contains("tollgate_tunnel_idle_closes_total 1\n"))
        }
    }

    @Test("The upstream's EOF reaches the client while the client can still send")
    func upstreamHalfClosesFirst() async throws {
        // A server that greets, closes its write side at once, and records what it reads after.
        let received = NIOLockedValueBoxBytes()
        let server = try await GreetAndHalfClose.serve(received)
        defer { server.close(promise: nil) }
        let port = try #require(server.localAddress?.port)
        try await withProxy(configuration: allowing(ports: [port])) { proxy in
            let client = try await RawClient.connect(port: proxy.port, halfClosure: true)
            defer { client.close() }
            try await client.send("CONNECT 127.0.0.1:\(port) HTTP/1.1\r\nHost: x\r\n\r\n")
            try await client.waitUntil("the greeting and EOF", timeout: .seconds(10)) { $0.receivedEOF }
            #expect(client.text.hasSuffix("\r\n\r\nhello, then EOF"))
            #expect(!client.isClosed, "only the server's side closed")
            try await client.send("still talking")
            try await eventually("the server reads it") { received.text == "still talking" }
            try await client.shutdownOutput()
            try await client.waitForClose()
        }
    }

    @Test(
        "A tunnel to a loopback TLS server (openssl s_server) carries curl's HTTPS request",
        .enabled(if: TLSTestServer.isAvailable)
    )
    func tlsThroughTunnel() async throws {
        let tls = try await TLSTestServer.start()
        defer { tls.stop() }
        try await withProxy(configuration: allowing(ports: [tls.port])) { proxy in
            let result = try await ChildProcess.run(
                "/usr/bin/curl",
                [
                    "-sS", "-k", "--max-time", "20", "-x", "http://127.0.0.1:\(proxy.port)",
                    "https://127.0.0.1:\(tls.port)/",
                ]
            )
            #expect(result.status == 0, "curl: \(result.stderr)")
            #expect(result.stdout.contains("s_server"), "\(result.stdout.prefix(300))")
            try await eventually("the access log line") { !proxy.accessLog.isEmpty }
            #expect(proxy.accessLog.first?.contains("\"CONNECT 127.0.0.1:\(tls.port) HTTP/1.1\" 200") == true)
        }
    }

    @Test("CONNECT to a port not in access.connect-ports gets 403 connect-port-denied; nothing is connected")
    func portDenied() async throws {
        let echo = try await LoopbackEchoServer.start()
        defer { echo.stop() }
        try await withProxy { proxy in  // default: 443 only
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            try await client.send("CONNECT 127.0.0.1:\(echo.port) HTTP/1.1\r\nHost: x\r\n\r\nhello")
            try await client.waitForClose()
            let response = try #require(client.responses.first)
            #expect(response.status == 403)
            #expect(response.header("Tollgate-Error") == "connect-port-denied")
            #expect(response.bodyText.contains("443"))
            #expect(echo.receivedBytes.isEmpty)
        }
    }

    @Test("CONNECT to an unreachable port gets 502 upstream-unreachable")
    func unreachable() async throws {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(channel.localAddress?.port)
        try await channel.close()
        try await withProxy(configuration: allowing(ports: [port])) { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            try await client.send("CONNECT 127.0.0.1:\(port) HTTP/1.1\r\nHost: x\r\n\r\n")
            try await client.waitForClose()
            let response = try #require(client.responses.first)
            #expect(response.status == 502)
            #expect(response.header("Tollgate-Error") == "upstream-unreachable")
        }
    }

    @Test("CONNECT to the proxy's own listener, however spelled, gets 403 host-denied")
    func ownListenerDenied() async throws {
        // Every port may be tunnelled to, the proxy's own among them.
        try await withProxy(configuration: allowing(ports: Array(1...65535))) { fixture in
            for spelling in ["127.0.0.1", "2130706433", "0x7f.1", "[::ffff:127.0.0.1]", "localhost"] {
                let client = try await RawClient.connect(port: fixture.port)
                defer { client.close() }
                try await client.send("CONNECT \(spelling):\(fixture.port) HTTP/1.1\r\nHost: x\r\n\r\n")
                try await client.waitForClose()
                let response = try #require(client.responses.first, "\(spelling)")
                #expect(response.status == 403, "\(spelling)")
                #expect(response.header("Tollgate-Error") == "host-denied", "\(spelling)")
            }
        }
    }

    @Test("CONNECT to the link-local metadata address gets 403 host-denied by default")
    func linkLocalDenied() async throws {
        try await withProxy { proxy in
            for spelling in ["169.254.169.254", "2852039166", "[::ffff:169.254.169.254]"] {
                let client = try await RawClient.connect(port: proxy.port)
                defer { client.close() }
                try await client.send("CONNECT \(spelling):443 HTTP/1.1\r\nHost: x\r\n\r\n")
                try await client.waitForClose()
                let response = try #require(client.responses.first)
                #expect(response.status == 403, "\(spelling)")
                #expect(response.header("Tollgate-Error") == "host-denied", "\(spelling)")
            }
        }
    }
}

/// Sends a greeting, closes its write side, and keeps what it reads.
final class GreetAndHalfClose: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    let received: NIOLockedValueBoxBytes
    init(received: NIOLockedValueBoxBytes) { self.received = received }

    /// A server on 127.0.0.1 (any port) whose every connection greets and half-closes.
    static func serve(_ received: NIOLockedValueBoxBytes) async throws -> any Channel {
        try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .childChannelInitializer { child in
                child.eventLoop.makeCompletedFuture {
                    try child.pipeline.syncOperations.addHandler(GreetAndHalfClose(received: received))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
    }

    func channelActive(context: ChannelHandlerContext) {
        let channel = context.channel
        context.writeAndFlush(NIOAny(ByteBuffer(string: "hello, then EOF"))).whenComplete { _ in
            channel.close(mode: .output, promise: nil)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        received.append(Array(unwrapInboundIn(data).readableBytesView))
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event { context.close(promise: nil) }
    }
}
