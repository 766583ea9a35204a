import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing
import TollgatePolicy
import TollgateTLS

@testable import TollgateProxy

/// The admin API's routes answered on an EmbeddedChannel (the HTTP server pipeline in front of
/// ``AdminHandler``): no listener, no socket.
@Suite("The admin API on an EmbeddedChannel")
struct AdminHandlerTests {
    /// An admin connection from `client`, and its policy runtime.
    private static func connection(
        from client: String = "127.0.0.1", interceptor: Interceptor? = nil
    ) throws -> (EmbeddedChannel, PolicyRuntime) {
        let runtime = PolicyRuntime(configuration: PolicyConfiguration(), sourceFile: nil, prepareSession: { _, _, _ in })
        let channel = EmbeddedChannel()
        channel.remoteAddress = try SocketAddress(ipAddress: client, port: 40000)
        try channel.pipeline.syncOperations.configureHTTPServerPipeline()
        try channel.pipeline.syncOperations.addHandler(
            AdminHandler(runtime: runtime, metrics: ProxyMetrics(), cache: nil, interceptor: interceptor, offline: nil)
        )
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9090)).wait()
        return (channel, runtime)
    }

    /// Sends `request` and returns the response the handler wrote.
    private static func exchange(_ request: String, on channel: EmbeddedChannel) throws -> RawResponse? {
        try channel.writeInbound(ByteBuffer(string: request))
        channel.embeddedEventLoop.run()
        var bytes: [UInt8] = []
        while let buffer = try channel.readOutbound(as: IOData.self) {
            if case .byteBuffer(let buffer) = buffer { bytes += Array(buffer.readableBytesView) }
        }
        return RawResponse.parseAll(bytes).responses.first
    }

    @Test("GET /healthz answers ok, and the connection is kept for the next request")
    func healthz() throws {
        let (channel, runtime) = try Self.connection()
        defer { runtime.shutdown() }
        let response = try #require(try Self.exchange("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", on: channel))
        #expect(response.status == 200)
        #expect(response.bodyText == "ok\n")
        #expect(channel.isActive)
        let again = try #require(try Self.exchange("GET /nothing-here HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", on: channel))
        #expect(again.status == 404)
    }

    @Test("The routes answer with their status and content type; a known path with another method is 405")
    func routes() throws {
        let (channel, runtime) = try Self.connection()
        defer { runtime.shutdown() }
        let tasks = try #require(try Self.exchange("GET /tasks HTTP/1.1\r\nHost: localhost\r\n\r\n", on: channel))
        #expect(tasks.status == 200)
        #expect(tasks.header("Content-Type") == "application/json")
        let metrics = try #require(try Self.exchange("GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n", on: channel))
        #expect(metrics.status == 200)
        #expect(metrics.header("Content-Type")?.hasPrefix("text/plain; version=0.0.4") == true)
        let har = try #require(try Self.exchange("GET /har?limit=x HTTP/1.1\r\nHost: localhost\r\n\r\n", on: channel))
        #expect(har.status == 400)
        let misses = try #require(try Self.exchange("GET /offline/misses HTTP/1.1\r\nHost: localhost\r\n\r\n", on: channel))
        #expect(misses.bodyText == "[]\n")
        let upstreams = try #require(try Self.exchange("GET /upstreams HTTP/1.1\r\nHost: localhost\r\n\r\n", on: channel))
        #expect(upstreams.header("Content-Type") == "application/json")
        #expect(upstreams.bodyText == "[]\n", "no connect-to target was asked of")
        let stats = try #require(try Self.exchange("GET /cache/stats HTTP/1.1\r\nHost: localhost\r\n\r\n", on: channel))
        #expect(stats.status == 404, "no cache")
        let wrongMethod = try #require(try Self.exchange("DELETE /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n", on: channel))
        #expect(wrongMethod.status == 405)
    }

    @Test("GET /ca.pem hands out the interception CA's certificate, and says how to make one when there is none")
    func caCertificate() throws {
        let authority = try CertificateAuthority.create(commonName: "Admin Test CA")
        let (channel, runtime) = try Self.connection(interceptor: try Interceptor(authority: authority))
        defer { runtime.shutdown() }
        let response = try #require(try Self.exchange("GET /ca.pem HTTP/1.1\r\nHost: localhost\r\n\r\n", on: channel))
        #expect(response.status == 200)
        #expect(response.header("Content-Type") == "application/x-pem-file")
        #expect(response.bodyText == authority.certificate.pemString)
        #expect(!response.bodyText.contains("PRIVATE KEY"))

        let (bare, bareRuntime) = try Self.connection()
        defer { bareRuntime.shutdown() }
        let none = try #require(try Self.exchange("GET /ca.pem HTTP/1.1\r\nHost: localhost\r\n\r\n", on: bare))
        #expect(none.status == 404)
        #expect(none.bodyText.contains("tollgate ca init"))
        let posted = try #require(try Self.exchange("POST /ca.pem HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n", on: bare))
        #expect(posted.status == 405)
    }

    @Test("POST /config/reload reloads the rules")
    func reload() throws {
        let (channel, runtime) = try Self.connection()
        defer { runtime.shutdown() }
        let response = try #require(
            try Self.exchange("POST /config/reload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n", on: channel)
        )
        #expect(response.status == 200)
        #expect(response.bodyText == "reloaded\n")
    }

    @Test("A client outside access.clients, a web page's request and a foreign Host are refused 403")
    func refusals() throws {
        let (outside, outsideRuntime) = try Self.connection(from: "192.0.2.7")
        defer { outsideRuntime.shutdown() }
        #expect(try Self.exchange("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", on: outside)?.status == 403)

        let (channel, runtime) = try Self.connection()
        defer { runtime.shutdown() }
        let page = try Self.exchange(
            "POST /config/reload HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://evil.test\r\nContent-Length: 0\r\n\r\n", on: channel
        )
        #expect(page?.status == 403)
        #expect(page?.bodyText.contains("Origin: http://evil.test") == true)
        let foreign = try Self.exchange("GET /healthz HTTP/1.1\r\nHost: rebound.test\r\n\r\n", on: channel)
        #expect(foreign?.status == 403)
    }

    @Test("A request with Connection: close is answered, then the connection closes")
    func closeAfterAnswer() throws {
        let (channel, runtime) = try Self.connection()
        defer { runtime.shutdown() }
        let response = try Self.exchange("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", on: channel)
        #expect(response?.header("Connection") == "close")
        #expect(!channel.isActive)
    }
}
