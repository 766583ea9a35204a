import NIOConcurrencyHelpers
public import NIOCore
public import NIOPosix

/// A TCP echo server on 127.0.0.1 for stream and tunnel tests. It echoes every byte, and when
/// the client half-closes (EOF) it sends `farewell` and then closes its own side — so a test
/// sees both directions of a half-close.
public final class LoopbackEchoServer: Sendable {
    private let channel: any Channel
    private let received: NIOLockedValueBox<[UInt8]>

    /// The port it listens on.
    public let port: Int

    /// Every byte received so far, across connections.
    public var receivedBytes: [UInt8] { received.withLockedValue { $0 } }

    private init(channel: any Channel, received: NIOLockedValueBox<[UInt8]>) {
        self.channel = channel
        self.received = received
        self.port = channel.localAddress?.port ?? 0
    }

    /// Starts the server.
    public static func start(
        farewell: String = "bye",
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> LoopbackEchoServer {
        let received = NIOLockedValueBox<[UInt8]>([])
        let channel = try await LoopbackListener.bind(halfClosure: true, group: group) {
            EchoHandler(farewell: farewell, received: received)
        }
        return LoopbackEchoServer(channel: channel, received: received)
    }

    /// Stops listening.
    public func stop() { channel.close(promise: nil) }
}

private final class EchoHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    let farewell: String
    let received: NIOLockedValueBox<[UInt8]>

    init(farewell: String, received: NIOLockedValueBox<[UInt8]>) {
        self.farewell = farewell
        self.received = received
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        received.withLockedValue { $0 += Array(bytes.readableBytesView) }
        context.writeAndFlush(wrapOutboundOut(bytes), promise: nil)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event {
            let farewell = ByteBuffer(string: self.farewell)
            context.writeAndFlush(wrapOutboundOut(farewell)).whenComplete { _ in
                context.close(mode: .output, promise: nil)
            }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }
}
