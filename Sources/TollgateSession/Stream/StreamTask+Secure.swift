import Foundation
import NIOCore
import TollgateHTTP
import TollgateTLS

/// TLS over a stream task's open connection (`startSecureConnection`, as STARTTLS does).
extension StreamTask {
    /// Starts TLS on the connection: reads and writes made before this call go as they are (plain),
    /// those made after go through TLS. The server's certificate is decided as a data task's is:
    /// the server-trust challenge goes to the session delegate's session-level handler first, then
    /// the task level; default handling accepts what OpenSSL verified against the session's roots
    /// for this host (``SessionConfiguration/tlsConfiguration``). Until the trust is decided no
    /// application byte flows either way. A failed handshake or a refused trust fails the waiting
    /// and later reads and writes with the error (`secureConnectionFailed`,
    /// `serverCertificateUntrusted`, …), and the task completes with it.
    ///
    /// The host checked is ``hostName`` (an upgraded stream task's: its request's host). Calling
    /// it twice, or after the stream failed, does nothing.
    public func startSecureConnection() {
        whenConnected { [self] in
            guard streamError == nil, !secureConnectionStarted, let channel, let handler = streamHandler else { return }
            guard let host = hostName ?? currentRequest?.url.host else { return }
            let port = port ?? currentRequest?.url.effectivePort ?? 443
            let context: TLSContext
            do {
                guard let made = try session.pool.tlsContext(host: host, port: port) else { return }
                context = made
            } catch {
                breakStream(SessionError(.secureConnectionFailed, nil, "TLS settings for \(host): \(error)"))
                return
            }
            secureConnectionStarted = true
            engine.transaction.secureConnectionStartDate = Date()
            let handshakeDone: @Sendable (TLSPeerEvaluation) -> Void = { [self] evaluation in
                onLoop { [self] in secureHandshakeCompleted(evaluation, host: host, port: port) }
            }
            onChannelLoop { [self] in
                do {
                    handler.onTLSHandshake = handshakeDone
                    handler.tlsHandler = try channel.pipeline.syncOperations.addTLSClientHandler(
                        context: context, serverHostname: host
                    )
                    // The handshake needs the peer's bytes, whether or not a read is waiting.
                    channel.read()
                } catch {
                    onLoop { [self] in breakStream(SessionError(.secureConnectionFailed, nil, "\(host): \(error)")) }
                }
            }
        }
    }

    /// Not supported: TLS stays on the connection until it closes. Going back to plain text
    /// after TLS (`stopSecureConnection`, deprecated by Apple in the seeds' time) would need a
    /// close_notify exchange and a peer that expects it; no protocol a proxy carries does that.
    ///
    /// - Throws: always, `unsupportedOperation`.
    public func stopSecureConnection() throws(SessionError) {
        throw SessionError(.unsupportedOperation, nil, "stopSecureConnection is not supported: TLS stays until the connection closes")
    }

    private func secureHandshakeCompleted(_ evaluation: TLSPeerEvaluation, host: String, port: Int) {
        engine.transaction.secureConnectionEndDate = Date()
        engine.transaction.negotiatedTLSProtocolVersion = evaluation.protocolVersion.description
        evaluateServerTrust(evaluation, host: host, port: port) { [self] failure in
            guard !isDone else { return }
            if let failure {
                breakStream(failure)
                return
            }
            let handler = streamHandler
            onChannelLoop { handler?.tlsHandler?.approvePeer() }
        }
    }

    /// Fails the stream with `error`: waiting and later reads and writes get it, the connection
    /// closes, and the task completes with it.
    func breakStream(_ error: SessionError) {
        if streamError == nil { streamError = error }
        let handler = streamHandler
        let channel = channel
        onChannelLoop {
            handler?.fail(error)
            channel?.close(promise: nil)
        }
    }
}
