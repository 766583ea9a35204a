import NIOCore
import NIOHTTP2
import TollgateHTTP
import TollgateTLS

/// A CONNECT stream's tunnel (RFC 9113 §8.5): the stream handler is the ``TunnelExchange``'s
/// ``ClientTunnelHost``, as an HTTP/1.1 connection is.
///
/// The handler itself is the relay's client side, not an adapter below a byte pipeline: it is
/// the exchange's responder already (its own answers — 403, 502, 504 — are HEADERS and DATA with
/// END_STREAM), and the relay needs only four calls, each one frame. Interception needs a byte
/// pipeline (TLS above the stream), so there ``HTTP2StreamBytes`` takes the handler's place.
///
/// - client → origin: DATA payloads go to ``StreamRelay/clientSent(_:)``; reads (hence the
///   WINDOW_UPDATEs the stream channel sends for what was read) wait while the relay writes the
///   last bytes to the origin. END_STREAM is the client's half-close.
/// - origin → client: each piece is one DATA write whose future completes once NIO wrote it to
///   the connection, that is once the client's windows took it; the relay reads the origin again
///   only then. The origin's EOF is END_STREAM.
/// - a relay that ends before both sides closed (the origin reset, a failed write) resets the
///   stream with CONNECT_ERROR.
extension HTTP2StreamHandler: ClientTunnelHost {
    func startRelay(_ relay: StreamRelay) {
        guard isActive else {
            relay.clientClosed()
            return
        }
        exchange = nil
        self.relay = relay
        machine.relayStarted()
        let early = earlyTunnelBytes
        earlyTunnelBytes = ByteBuffer()
        relay.start(initialClientBytes: early, clientInputClosed: machine.requestEnded)
        resumeReadingIfPossible()
    }

    func writeRaw(_ bytes: ByteBuffer) -> EventLoopFuture<Void>? {
        guard let context, relay != nil, !endStreamSent, context.channel.isActive else { return nil }
        return context.writeAndFlush(wrapOutboundOut(.data(.init(data: .byteBuffer(bytes)))))
    }

    /// The origin sent EOF: END_STREAM, after the DATA before it.
    func closeOutput() {
        guard let context, !endStreamSent else { return }
        endStreamSent = true
        context.writeAndFlush(
            wrapOutboundOut(.data(.init(data: .byteBuffer(ByteBuffer()), endStream: true))),
            promise: nil
        )
    }

    /// The relay ended. Both sides closed: the stream closes by itself once its END_STREAM is out.
    /// Otherwise the tunnel failed, and the stream is reset with CONNECT_ERROR (§8.5).
    func close() {
        relay = nil
        exchange = nil
        let clean = endStreamSent && machine.requestEnded
        _ = machine.responseEnded()
        guard !clean, let context else { return }
        context.writeAndFlush(wrapOutboundOut(.rstStream(.connectError)), promise: nil)
        context.close(promise: nil)
    }

    func resumeReadingIfPossible() {
        if machine.relayMayRead(relayWantsBytes: relay?.wantsClientBytes ?? false) { context?.read() }
    }

    /// Answers the CONNECT with 200 and continues the stream as an intercepted connection: its
    /// DATA is the client's TLS (``HTTP2StreamBytes``), under a leaf minted for the host; inside,
    /// ALPN picks HTTP/1.1 or a nested HTTP/2 front as for an intercepted HTTP/1.1 CONNECT (the
    /// ``ClientConnectionHandler`` that takes this handler's place does that).
    func beginInterception(of origin: HTTPURL, context tlsContext: TLSContext) {
        guard let context, isActive else { return }
        sendInterim(HTTPResponseHead(status: 200, reason: "Connection Established"))
        exchange = nil
        let early = earlyTunnelBytes
        earlyTunnelBytes = ByteBuffer()
        let inputClosed = machine.requestEnded
        let pipeline = context.pipeline.syncOperations
        do {
            let bytes = HTTP2StreamBytes(outputClosed: false)
            let tls = try TLSHandler.makeServerHandler(context: tlsContext)
            let inner = ClientConnectionHandler(environment: environment, clientTLS: connection.memo.clientTLS)
            inner.becomeIntercepted(origin: origin)
            try pipeline.addHandler(bytes, position: .after(self))
            try pipeline.addHandler(tls, position: .after(bytes))
            try pipeline.addHandler(inner, position: .after(tls))
            _ = machine.responseEnded()
            pipeline.removeHandler(self, promise: nil)
            let bytesContext = try pipeline.context(handler: bytes)
            // The client's first TLS bytes, if they came with the CONNECT.
            if early.readableBytes > 0 { bytesContext.fireChannelRead(NIOAny(early)) }
            if inputClosed { bytesContext.fireUserInboundEventTriggered(ChannelEvent.inputClosed) }
        } catch {
            standardErrorLine("tollgate: interception of \(origin.authority) on an HTTP/2 stream failed: \(error)")
            reset(.internalError)
            return
        }
        // Reads were held while the tunnel was being decided; the handlers above read now.
        context.channel.read()
    }
}
