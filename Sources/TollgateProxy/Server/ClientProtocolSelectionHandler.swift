import Logging
import NIOCore
import TollgateTLS

/// Stands behind a TLS listener's ``TLSHandler`` until the handshake completes, then puts the
/// pipeline for the negotiated protocol in its place (``ClientProtocolSelection``) and leaves.
///
/// Before that no plaintext arrives. A failed handshake (a client that does not trust the
/// certificate, plain HTTP sent to the TLS port, a version below `min-version`) closes the
/// connection; so does shutdown, since there is no exchange to finish. A failed handshake is
/// counted in `/metrics` by reason (``ClientHandshakeFailure``), once per connection.
final class ClientProtocolSelectionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    private let environment: ListenerEnvironment
    /// What the listener's `client-auth` does with a verified certificate: forwarding.
    private let clientAuth: ListenerTLS.ClientAuthRules
    /// The handshake's end was counted (a failure) or the handler left (a success).
    private var settled = false

    init(environment: ListenerEnvironment, clientAuth: ListenerTLS.ClientAuthRules = .init()) {
        self.environment = environment
        self.clientAuth = clientAuth
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let completed = event as? TLSHandshakeCompleted {
            let evaluation = completed.evaluation
            let selection = ClientProtocolSelection(negotiated: evaluation.applicationProtocol)
            do {
                try selection.configure(
                    context.pipeline.syncOperations,
                    at: .after(self),
                    environment: environment,
                    remoteAddress: environment.clientAddress(of: context.channel),
                    clientTLS: ClientTLS(evaluation, forwardsCertificate: clientAuth.forwardsCertificate)
                )
            } catch {
                context.close(promise: nil)
                return
            }
            settled = true
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            return
        }
        if event is ChannelShouldQuiesceEvent {
            settled = true  // shutdown, not the client's failure
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A failed handshake or a reset: nothing was served yet. A client `client-auth.pins`
        // refused is said (which keys its chain has), as an operator adding an agent needs it.
        if let tls = error as? TLSError, let refused = tls.verificationError, refused.code == .certificateRejected, !settled {
            ListenerTLS.logger.notice("refused a client certificate: \(refused.reason) (\(refused.subject ?? "no subject"))")
        }
        settle(ClientHandshakeFailure(error))
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        // Closed before the handshake completed, without an error (an EOF before any byte).
        settle(.closed)
        context.fireChannelInactive()
    }

    private func settle(_ failure: ClientHandshakeFailure) {
        guard !settled else { return }
        settled = true
        environment.metrics.clientHandshakeFailed(failure)
    }
}
