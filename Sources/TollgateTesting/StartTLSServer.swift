import NIOConcurrencyHelpers
import NIOCore
import TollgateTLS

/// A STARTTLS-style server on 127.0.0.1 for stream tasks' `startSecureConnection`: plain text
/// until the client sends `STARTTLS\n`, then it answers `GO\n`, starts TLS (OpenSSL, through
/// TollgateTLS) with the PKI's server certificate, and echoes what it decrypts, keeping a copy.
/// The client's EOF (under TLS its `close_notify`) is answered `bye\n` before the server closes.
public final class StartTLSServer: Sendable {
    private let channel: any Channel
    private let received: NIOLockedValueBox<String>

    /// The port it listens on.
    public var port: Int { channel.localAddress?.port ?? 0 }
    /// What it decrypted so far, across connections.
    public var decrypted: String { received.withLockedValue { $0 } }

    private init(channel: any Channel, received: NIOLockedValueBox<String>) {
        self.channel = channel
        self.received = received
    }

    /// Starts the server with `pki`'s server identity.
    public static func start(pki: TestPKI) async throws -> StartTLSServer {
        let context = try TLSContext(configuration: pki.serverConfiguration)
        let received = NIOLockedValueBox("")
        let channel = try await LoopbackListener.bind(halfClosure: true) {
            StartTLSHandler(context: context, decrypted: received)
        }
        return StartTLSServer(channel: channel, received: received)
    }

    /// Stops listening.
    public func stop() { channel.close(promise: nil) }
}

private final class StartTLSHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let context: TLSContext
    let decrypted: NIOLockedValueBox<String>
    private var secure = false
    private var pending = ""

    init(context: TLSContext, decrypted: NIOLockedValueBox<String>) {
        self.context = context
        self.decrypted = decrypted
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        if secure {
            decrypted.withLockedValue { $0 += String(buffer: bytes) }
            context.writeAndFlush(wrapOutboundOut(bytes), promise: nil)
            return
        }
        pending += String(buffer: bytes)
        guard pending.contains("STARTTLS\n") else { return }
        // Written before the TLS handler is in: "GO" goes in plain text.
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: "GO\n")), promise: nil)
        secure = true
        do {
            try context.pipeline.syncOperations.addTLSServerHandler(context: self.context)
        } catch {
            context.close(promise: nil)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard case ChannelEvent.inputClosed = event else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        guard secure else {
            context.close(promise: nil)
            return
        }
        // Writing goes on after the client's half-close; then our close.
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: "bye\n"))).whenComplete { _ in
            channel.close(promise: nil)
        }
    }
}
