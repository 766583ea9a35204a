import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
import TollgateHTTP
import TollgatePolicy
import TollgateProxy
import TollgateSession
import TollgateTLS
import TollgateTesting

/// Intercepts every CONNECT, on one session that trusts the test origin's CA.
private struct InterceptEverything: ProxyPolicy {
    let session: Session
    let configuration: PolicyConfiguration

    func proxyRoute(for url: HTTPURL) -> ProxyRoute {
        ProxyRoute(session: session, sessionName: "default", intercepts: true)
    }
}

/// Sends `CONNECT` in the same write as the first TLS bytes (the ClientHello), as a client that
/// does not wait for the proxy's 200 would, and strips the 200 before the TLS handler sees it.
private final class OptimisticConnect: ChannelDuplexHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let authority: String
    private var sentConnect = false
    private var answer: ByteBuffer?
    let status = NIOLockedValueBox<String?>(nil)

    init(authority: String) { self.authority = authority }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard !sentConnect else {
            context.write(data, promise: promise)
            return
        }
        sentConnect = true
        var combined = ByteBuffer(string: "CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n\r\n")
        var hello = unwrapOutboundIn(data)
        combined.writeBuffer(&hello)
        context.write(wrapOutboundOut(combined), promise: promise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard status.withLockedValue({ $0 }) == nil else {
            context.fireChannelRead(data)
            return
        }
        var buffer = unwrapInboundIn(data)
        answer.setOrWriteBuffer(&buffer)
        guard let text = answer?.getString(at: answer!.readerIndex, length: answer!.readableBytes),
            let end = text.range(of: "\r\n\r\n")
        else { return }
        let headLength = text.utf8.distance(from: text.utf8.startIndex, to: end.upperBound.samePosition(in: text.utf8)!)
        status.withLockedValue { $0 = String(text[..<end.lowerBound]) }
        var rest = answer!
        rest.moveReaderIndex(forwardBy: headLength)
        answer = nil
        if rest.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(rest)) }
    }
}

/// Collects the plaintext the TLS handler delivers.
private final class Collect: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    let text = NIOLockedValueBox("")
    let handshake = NIOLockedValueBox<TLSHandshakeCompleted?>(nil)

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let piece = String(buffer: unwrapInboundIn(data))
        text.withLockedValue { $0 += piece }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSHandshakeCompleted { handshake.withLockedValue { $0 = event } }
        context.fireUserInboundEventTriggered(event)
    }
}

@Suite("Interception: a ClientHello sent with the CONNECT", .timeLimit(.minutes(1)))
struct InterceptionEarlyBytesTests {
    @Test("TLS bytes right behind the CONNECT head reach the minted-leaf handshake; requests inside are served")
    func clientHelloWithConnect() async throws {
        let originPKI = try TestPKI()
        let origin = try await LoopbackOrigin.start(tls: originPKI.serverConfiguration) { request, respond in
            respond.send(status: 200, body: "inside \(request.target)")
        }
        defer { origin.stop() }
        var sessionConfiguration = ProxyServer.defaultSessionConfiguration
        sessionConfiguration.kind = .ephemeral
        sessionConfiguration.tlsConfiguration = originPKI.sessionTLSConfiguration
        let session = Session(configuration: sessionConfiguration)
        defer { session.invalidateAndCancel() }
        var configuration = PolicyConfiguration()
        configuration.access.connectPorts = [origin.port]
        let authority = try CertificateAuthority.create(commonName: "Early Bytes CA")
        let server = try await ProxyServer.start(
            .init(
                listen: ListenAddress(host: "127.0.0.1", port: 0),
                accessLog: .off,
                interceptor: try Interceptor(authority: authority)
            ),
            policy: InterceptEverything(session: session, configuration: configuration)
        )

        var clientTLS = TLSConfiguration.makeClientConfiguration()
        clientTLS.trustRoots = .certificates([authority.certificate])
        let tlsContext = try TLSContext(configuration: clientTLS)
        let connect = OptimisticConnect(authority: "127.0.0.1:\(origin.port)")
        let collect = Collect()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(collect)
                    try channel.pipeline.syncOperations.addTLSClientHandler(context: tlsContext, serverHostname: "127.0.0.1")
                    try channel.pipeline.syncOperations.addHandler(connect, position: .first)
                }
            }
            .connect(host: "127.0.0.1", port: server.boundAddress.port)
            .get()
        defer { channel.close(promise: nil) }

        try await eventually("the handshake with the minted leaf") { collect.handshake.withLockedValue { $0 } != nil }
        #expect(connect.status.withLockedValue { $0 } == "HTTP/1.1 200 Connection Established")
        let evaluation = try #require(collect.handshake.withLockedValue { $0 }?.evaluation)
        #expect(evaluation.trustResult == .trusted)
        #expect(evaluation.peerCertificate?.subjectAlternativeNames == [.ipAddress("127.0.0.1")])
        // Two requests, one connection: keep-alive inside the intercepted TLS.
        try await channel.writeAndFlush(ByteBuffer(string: "GET /one HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")).get()
        try await eventually("the first answer") { collect.text.withLockedValue { $0 }.hasSuffix("inside /one") }
        try await channel.writeAndFlush(ByteBuffer(string: "GET /two HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")).get()
        try await eventually("the second answer") { collect.text.withLockedValue { $0 }.hasSuffix("inside /two") }
        #expect(origin.requests.map(\.target) == ["/one", "/two"])
        await server.shutdown(gracePeriod: .seconds(1))
    }
}
