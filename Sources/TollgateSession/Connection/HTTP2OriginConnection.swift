import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP2
import TollgateTLS

/// An origin connection the server answered with `h2`: NIOHTTP2's handler (with its inline stream
/// multiplexer) and this handler behind it on the connection's channel, which watches the
/// connection-level frames — the server's SETTINGS (how many streams it takes), GOAWAY — and the
/// close, and tells the pool. Streams are opened by ``HTTP2StreamExchange``, one per exchange.
final class HTTP2OriginConnection: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTP2Frame

    /// Opens streams (touched on the channel's event loop only).
    private(set) var multiplexer: NIOHTTP2Handler.StreamMultiplexer?
    /// The TLS handler below, which holds application data until the server's trust is approved.
    let tlsHandler: TLSHandler?
    let eventLoop: any EventLoop
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS (unlimited when it does not say: `Int.max`).
    var onSettings: (@Sendable (Int) -> Void)?
    /// The server sent GOAWAY: no new stream may start.
    var onGoAway: (@Sendable () -> Void)?
    /// The channel closed (once).
    var onClose: (@Sendable () -> Void)?
    private let approved = NIOLockedValueBox(false)
    /// Streams leased on this connection so far (touched under the pool's lock only).
    var streamsLeased = 0
    /// The last stream id of the server's GOAWAY, once one came (on the loop). NIOHTTP2 hands the
    /// GOAWAY frame on before it closes the streams above it (and closes them with CANCEL, not
    /// REFUSED_STREAM), so a stream closing can tell it was refused (RFC 9113 §6.8).
    private(set) var goAwayLastStreamID: HTTP2StreamID?

    init(tlsHandler: TLSHandler?, eventLoop: any EventLoop) {
        self.tlsHandler = tlsHandler
        self.eventLoop = eventLoop
    }

    /// Whether the session accepted the server's trust (read by the pool from any thread).
    var isTrustApproved: Bool { approved.withLockedValue { $0 } }

    /// Lets application data flow (the connection preface was queued until now). On the loop.
    func approvePeer() {
        approved.withLockedValue { $0 = true }
        tlsHandler?.approvePeer()
    }

    /// Replaces the HTTP/1.1 handler of a connection whose TLS handshake chose `h2` by the HTTP/2
    /// handlers, and starts reading (HTTP/2 reads all the time: flow control, not the socket, holds
    /// a slow stream back). Called on the channel's event loop.
    static func install(on channel: any Channel, replacing old: OriginConnectionHandler) throws -> HTTP2OriginConnection {
        let connection = HTTP2OriginConnection(tlsHandler: old.tlsHandler, eventLoop: channel.eventLoop)
        let pipeline = channel.pipeline.syncOperations
        pipeline.removeHandler(old, promise: nil)
        var settings = NIOHTTP2Handler.ConnectionConfiguration()
        // NIO's defaults, and no server push (RFC 9113 §8.4).
        settings.initialSettings = nioDefaultSettings + [HTTP2Setting(parameter: .enablePush, value: 0)]
        let h2 = NIOHTTP2Handler(
            mode: .client, eventLoop: channel.eventLoop, connectionConfiguration: settings,
            streamConfiguration: .init()
        ) { stream in
            // The server may not open streams (no push): refuse any.
            stream.close()
        }
        try pipeline.addHandler(h2)
        try pipeline.addHandler(connection)
        connection.multiplexer = try h2.syncMultiplexer()
        channel.setOption(.autoRead, value: true).whenComplete { _ in }
        channel.read()
        return connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .settings(.settings(let settings)):
            let maximum = settings.last { $0.parameter == .maxConcurrentStreams }?.value
            onSettings?(maximum ?? Int.max)
        case .goAway(let lastStreamID, _, _):
            goAwayLastStreamID = min(lastStreamID, goAwayLastStreamID ?? lastStreamID)
            onGoAway?()
            onGoAway = nil
        default:
            break
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard error is any NIOHTTP2Error else {
            // TLS or the socket: the connection is gone; its streams fail as the channel closes.
            context.close(promise: nil)
            return
        }
        // An HTTP/2 error, of one stream (NIOHTTP2 reset it) or of the connection (NIOHTTP2 sent
        // GOAWAY): no new stream goes on this connection; the pool closes it after the open ones.
        onGoAway?()
        onGoAway = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        multiplexer = nil
        onClose?()
        onClose = nil
        context.fireChannelInactive()
    }
}
