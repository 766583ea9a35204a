import Logging
import NIOCore
import TollgateHTTP
import TollgateTLS

/// What only the HTTP/1.1 connection offers: becoming a relay (CONNECT, upgrades) and
/// interception of a CONNECT.
extension ClientConnectionHandler: ClientTunnelHost {
    /// Hands the connection to a relay: from now on the client's bytes go to it raw (starting with
    /// those that arrived after the request head).
    func startRelay(_ relay: StreamRelay) {
        guard isActive else {
            relay.clientClosed()
            return
        }
        exchange = nil
        machine.relayStarted()
        self.relay = relay
        cancelTimers()
        relay.start(initialClientBytes: decoder.takeRawBytes(), clientInputClosed: machine.clientInputClosed)
        resumeReadingIfPossible()
    }

    /// Writes relayed bytes to the client; the future completes when the kernel took them (nil:
    /// the connection is gone).
    func writeRaw(_ bytes: ByteBuffer) -> EventLoopFuture<Void>? {
        guard let context, !machine.isClosing else { return nil }
        return context.writeAndFlush(wrapOutboundOut(bytes))
    }

    /// Sends EOF to the client (the upstream half-closed a tunnel).
    func closeOutput() {
        context?.close(mode: .output, promise: nil)
    }

    /// Closes the connection (a relay ended).
    func close() {
        closeNow()
    }

    /// Answers the current CONNECT with 200 and continues as an intercepted connection: TLS with
    /// the client under `context` (a leaf minted for the host), then requests to `origin` read
    /// from inside it. Bytes the client sent after the CONNECT head are its first TLS bytes.
    func beginInterception(of origin: HTTPURL, context tlsContext: TLSContext) {
        guard let context, isActive else { return }
        // Out in plaintext before the TLS handler goes in front.
        sendInterim(HTTPResponseHead(status: 200, reason: "Connection Established"))
        context.flush()
        let early = decoder.takeRawBytes()
        decoder = Self.makeDecoder(limits)
        becomeIntercepted(origin: origin)
        machine.interceptionStarted()
        exchange = nil
        writer.reset()
        do {
            // Right before this handler, not first: on a TLS listener the listener's own TLS
            // handler stays in front, and the client's TLS to the origin runs inside it.
            let handler = try TLSHandler.makeServerHandler(context: tlsContext)
            try context.pipeline.syncOperations.addHandler(handler, position: .before(self))
            // The early bytes are the client's first TLS bytes to this handler: handed to it
            // directly, not from the pipeline's head, where a TLS listener's handler would take them.
            if early.readableBytes > 0 {
                handler.channelRead(context: try context.pipeline.syncOperations.context(handler: handler), data: NIOAny(early))
            }
        } catch {
            standardErrorLine("tollgate: interception of \(origin.authority) failed: \(error)")
            closeNow()
            return
        }
        updateTimers()
        resumeReadingIfPossible()
    }

    /// The client ended the TLS handshake of an intercepted CONNECT. An alert from it means it
    /// refused the minted certificate (it does not trust the CA, or pins the real key): this
    /// client's CONNECTs to the host are tunnelled untouched from now on, and this is logged once.
    func interceptedHandshakeFailed(host: String, _ error: TLSError) {
        guard error == .alertReceived, let interceptor = environment.interceptor else { return }
        let alert = error.alert ?? "an alert"
        if interceptor.rememberRefusal(of: host, by: clientAddress, reason: alert) {
            Interceptor.logger.notice(
                "the client \(clientAddress) refused the certificate minted for \(host) (\(alert)); its CONNECTs to \(host) are tunnelled untouched from now on",
                metadata: ["host": "\(host)", "client": "\(clientAddress)", "alert": "\(alert)"]
            )
        }
    }
}
