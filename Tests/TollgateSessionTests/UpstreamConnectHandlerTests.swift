import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import Testing
import TollgateTesting

@testable import TollgateSession

/// The CONNECT through an upstream proxy, event by event on an EmbeddedChannel.
@Suite("Opening a tunnel through an upstream proxy (UpstreamConnectHandler)")
struct UpstreamConnectHandlerTests {
    /// A channel with the handler in front of a collector of what it passes on.
    private func channel(
        passesLeftover: Bool,
        authentication: UpstreamProxyAuthentication? = nil
    ) throws -> (EmbeddedChannel, UpstreamConnectHandler, Collector) {
        let channel = EmbeddedChannel()
        let handler = UpstreamConnectHandler(
            host: "deps.example", port: 443, eventLoop: channel.eventLoop, passesLeftover: passesLeftover,
            authentication: authentication
        )
        let collector = Collector()
        try channel.pipeline.syncOperations.addHandler(handler)
        try channel.pipeline.syncOperations.addHandler(collector)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 3128)).wait()
        return (channel, handler, collector)
    }

    private func state(of promise: EventLoopPromise<Void>) -> Result<Void, any Error>? {
        let outcome = NIOLockedValueBox<Result<Void, any Error>?>(nil)
        promise.futureResult.whenComplete { result in outcome.withLockedValue { $0 = result } }
        return outcome.withLockedValue { $0 }
    }

    @Test("It sends CONNECT with Host once active and opens on a 2xx split over two reads")
    func opensOnTwoHundred() throws {
        let (channel, handler, collector) = try channel(passesLeftover: false)
        let sent = try #require(try channel.readOutbound(as: ByteBuffer.self))
        #expect(String(buffer: sent) == "CONNECT deps.example:443 HTTP/1.1\r\nHost: deps.example:443\r\n\r\n")
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 200 Connection Est"))
        #expect(state(of: handler.established) == nil)
        try channel.writeInbound(ByteBuffer(string: "ablished\r\n\r\n"))
        guard case .success = state(of: handler.established) else {
            Issue.record("the tunnel did not open")
            return
        }
        #expect(collector.received.isEmpty)
        #expect(channel.isActive)
    }

    @Test("Under a stream task, bytes after the head (an origin that speaks first) are passed on")
    func passesTheBanner() throws {
        let (channel, handler, collector) = try channel(passesLeftover: true)
        _ = try channel.readOutbound(as: ByteBuffer.self)
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 200 OK\r\n\r\nSSH-2.0-OpenSSH_9.2\r\n"))
        guard case .success = state(of: handler.established) else {
            Issue.record("the tunnel did not open")
            return
        }
        #expect(collector.received == ["SSH-2.0-OpenSSH_9.2\r\n"])
    }

    @Test("Under TLS, bytes after the head are a protocol error and close the connection")
    func refusesEarlyBytesUnderTLS() throws {
        let (channel, handler, _) = try channel(passesLeftover: false)
        _ = try channel.readOutbound(as: ByteBuffer.self)
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 200 OK\r\n\r\nsurprise"))
        guard case .failure(let error) = state(of: handler.established) else {
            Issue.record("the tunnel opened")
            return
        }
        #expect("\(error)".contains("bytes before the TLS handshake"))
        #expect(!channel.isActive)
    }

    @Test("A refusal fails the tunnel with the proxy's status line")
    func refusal() throws {
        let (channel, handler, _) = try channel(passesLeftover: true)
        _ = try channel.readOutbound(as: ByteBuffer.self)
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic\r\n\r\n"))
        guard case .failure(let error) = state(of: handler.established) else {
            Issue.record("the tunnel opened")
            return
        }
        #expect((error as? SessionError)?.code == .cannotConnectToHost)
        #expect("\(error)".contains("refused CONNECT deps.example:443: HTTP/1.1 407 Proxy Authentication Required"))
    }

    /// `ci:s3cret`, as the proxy's Basic credential.
    private static let authorization = "Basic Y2k6czNjcmV0"

    private func authentication() -> UpstreamProxyAuthentication {
        UpstreamProxyAuthentication(credential: Credential(user: "ci", password: "s3cret", persistence: .forSession))
    }

    @Test("A 407 offering Basic is answered on the same connection once its body (split over reads) is skipped")
    func answersOnTheSameConnection() throws {
        let authentication = authentication()
        let (channel, handler, collector) = try channel(passesLeftover: true, authentication: authentication)
        let first = try #require(try channel.readOutbound(as: ByteBuffer.self))
        #expect(!String(buffer: first).contains("Proxy-Authorization"))  // not before the proxy asks
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 407 Proxy Authentication Required\r\n"
            + "Proxy-Authenticate: Basic realm=\"parent\"\r\nContent-Length: 10\r\n\r\n12345"))
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)  // the body is not over
        try channel.writeInbound(ByteBuffer(string: "67890"))
        let second = try #require(try channel.readOutbound(as: ByteBuffer.self))
        #expect(String(buffer: second) == "CONNECT deps.example:443 HTTP/1.1\r\nHost: deps.example:443\r\n"
            + "Proxy-Authorization: \(Self.authorization)\r\n\r\n")
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 200 OK\r\n\r\nbanner"))
        guard case .success = state(of: handler.established) else {
            Issue.record("the tunnel did not open")
            return
        }
        #expect(collector.received == ["banner"])  // nothing of the 407's body
        #expect(authentication.preemptiveValue == Self.authorization)  // from the start from now on
    }

    @Test("A 407 that closes the connection asks the caller to connect again; the next CONNECT carries the credential")
    func closingProxyRetries() throws {
        let authentication = authentication()
        let (channel, handler, _) = try channel(passesLeftover: false, authentication: authentication)
        _ = try channel.readOutbound(as: ByteBuffer.self)
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 407 Proxy Authentication Required\r\n"
            + "Proxy-Authenticate: Basic\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"))
        guard case .failure(let error) = state(of: handler.established) else {
            Issue.record("the tunnel opened")
            return
        }
        #expect(error is UpstreamConnectHandler.RetryWithCredential)
        #expect(!channel.isActive)
        let (again, _, _) = try self.channel(passesLeftover: false, authentication: authentication)
        let sent = try #require(try again.readOutbound(as: ByteBuffer.self))
        #expect(String(buffer: sent).contains("Proxy-Authorization: \(Self.authorization)\r\n"))
    }

    @Test("A 407 to a CONNECT that carried the credential, or one offering no Basic, fails the tunnel")
    func refusedOrUnanswerable() throws {
        let authentication = authentication()
        _ = authentication.answer(challenges: ["Basic"])
        let (channel, handler, _) = try channel(passesLeftover: false, authentication: authentication)
        _ = try channel.readOutbound(as: ByteBuffer.self)
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 407 No\r\nProxy-Authenticate: Basic\r\nContent-Length: 0\r\n\r\n"))
        guard case .failure(let error) = state(of: handler.established) else {
            Issue.record("the tunnel opened")
            return
        }
        #expect("\(error)".contains("upstream-proxy-credentials were not accepted"))
        #expect(!"\(error)".contains("Y2k6"))

        let (digest, digestHandler, _) = try self.channel(passesLeftover: false, authentication: self.authentication())
        _ = try digest.readOutbound(as: ByteBuffer.self)
        try digest.writeInbound(ByteBuffer(string: "HTTP/1.1 407 No\r\nProxy-Authenticate: Digest realm=\"x\", nonce=\"y\"\r\nContent-Length: 0\r\n\r\n"))
        guard case .failure(let unanswerable) = state(of: digestHandler.established) else {
            Issue.record("the tunnel opened")
            return
        }
        #expect("\(unanswerable)".contains("refused CONNECT deps.example:443: HTTP/1.1 407 No"))
    }

    @Test("An answer that is not HTTP, or never ends its head, fails the tunnel")
    func garbage() throws {
        let (channel, handler, _) = try channel(passesLeftover: true)
        _ = try channel.readOutbound(as: ByteBuffer.self)
        try channel.writeInbound(ByteBuffer(string: "SSH-2.0-x\r\n\r\n"))
        guard case .failure(let error) = state(of: handler.established) else {
            Issue.record("the tunnel opened")
            return
        }
        #expect("\(error)".contains("is not HTTP"))

        let (long, longHandler, _) = try self.channel(passesLeftover: true)
        _ = try long.readOutbound(as: ByteBuffer.self)
        try long.writeInbound(ByteBuffer(string: "HTTP/1.1 200 OK\r\n" + String(repeating: "X-Pad: y\r\n", count: 2_000)))
        guard case .failure(let tooLong) = state(of: longHandler.established) else {
            Issue.record("an endless head opened the tunnel")
            return
        }
        #expect("\(tooLong)".contains("oversized head"))
    }
}

/// Collects the text of what reaches it.
private final class Collector: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    var received: [String] = []

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        received.append(String(buffer: unwrapInboundIn(data)))
    }
}
