/// The life of one TLS connection as ``TLSHandler`` sees it: events in, actions out, no I/O.
///
/// ```
/// idle ──channelActive──▶ handshaking ──completed──▶ active ──close / close_notify──▶ closing ──inactive──▶ closed
///                              │          (deferred) ──▶ awaitingApproval ──peerApproved──▶ active
///                              └──failed / timed out──▶ closed
/// ```
///
/// `awaitingApproval` is `active` with application data held in both directions until the application
/// has checked the peer (pins, a server-trust challenge) and called ``TLSHandler/approvePeer()``.
struct TLSHandlerStateMachine {
    private enum State: Equatable {
        case idle
        case handshaking
        case awaitingApproval
        case active
        case closing
        case closed
    }

    /// What the handler must do next.
    enum Action: Equatable {
        case none
        /// Schedule the handshake timeout and take the first handshake step.
        case startHandshake
        /// Send the handshake's ciphertext and ask the socket for more.
        case continueHandshake
        /// Cancel the timeout, send what is left of the handshake, fire ``TLSHandshakeCompleted``, decrypt
        /// what already arrived; with `startDataFlow`, also deliver and encrypt application data.
        case completeHandshake(startDataFlow: Bool)
        /// Deliver held plaintext (when asked for) and encrypt held writes.
        case startDataFlow
        /// Send `close_notify`, then close the channel; with `deliverHeldData`, first deliver any decrypted
        /// plaintext still held.
        case sendCloseNotifyAndClose(deliverHeldData: Bool)
        /// Close the channel without a TLS shutdown.
        case closeChannel
        /// Send what OpenSSL queued (an alert), fire the error, close the channel.
        case failAndClose(TLSError)
        /// Fire the error, if any, then `channelInactive`; fail what is still held.
        case fireInactive(TLSError?)
    }

    private var state: State = .idle
    private let defersTrustDecision: Bool
    private let reportsUncleanShutdown: Bool

    init(defersTrustDecision: Bool, reportsUncleanShutdown: Bool) {
        self.defersTrustDecision = defersTrustDecision
        self.reportsUncleanShutdown = reportsUncleanShutdown
    }

    /// Whether OpenSSL should be handed ciphertext to decrypt.
    var decryptsApplicationData: Bool { self.state == .awaitingApproval || self.state == .active }

    /// Whether decrypted data may go to the next handler.
    var deliversApplicationData: Bool { self.state == .active }

    /// Whether writes may be encrypted and sent.
    var encryptsApplicationData: Bool { self.state == .active }

    /// Whether the handshake is under way.
    var isHandshaking: Bool { self.state == .handshaking }

    /// Whether the channel is closing or closed.
    var isClosingOrClosed: Bool { self.state == .closing || self.state == .closed }

    /// The channel became active (or the handler was added to an active channel).
    mutating func channelActive() -> Action {
        guard self.state == .idle else { return .none }
        self.state = .handshaking
        return .startHandshake
    }

    /// A handshake step ran and OpenSSL wants more ciphertext.
    mutating func handshakeNeedsMoreData() -> Action {
        guard self.state == .handshaking else { preconditionFailure("Invalid state: \(self.state)") }
        return .continueHandshake
    }

    /// The handshake completed (OpenSSL accepted or, when deferring, noted the peer's chain).
    mutating func handshakeCompleted() -> Action {
        guard self.state == .handshaking else { preconditionFailure("Invalid state: \(self.state)") }
        if self.defersTrustDecision {
            self.state = .awaitingApproval
            return .completeHandshake(startDataFlow: false)
        }
        self.state = .active
        return .completeHandshake(startDataFlow: true)
    }

    /// The handshake failed.
    mutating func handshakeFailed(_ error: TLSError) -> Action {
        guard self.state == .handshaking else { preconditionFailure("Invalid state: \(self.state)") }
        self.state = .closed
        return .failAndClose(error)
    }

    /// The handshake timer fired.
    mutating func handshakeTimedOut(_ error: TLSError) -> Action {
        guard self.state == .handshaking else { return .none }  // lost the race with completion
        self.state = .closed
        return .failAndClose(error)
    }

    /// The application accepted the peer.
    mutating func peerApproved() -> Action {
        switch self.state {
        case .awaitingApproval:
            self.state = .active
            return .startDataFlow
        case .active, .closing, .closed:
            return .none
        case .idle, .handshaking:
            preconditionFailure("approvePeer() before the handshake completed; state: \(self.state)")
        }
    }

    /// The application closed the channel.
    mutating func closeRequested() -> Action {
        switch self.state {
        case .idle, .handshaking:
            // Nothing to shut down cleanly: OpenSSL refuses close_notify in the middle of a handshake.
            self.state = .closed
            return .closeChannel
        case .awaitingApproval, .active:
            self.state = .closing
            return .sendCloseNotifyAndClose(deliverHeldData: false)
        case .closing:
            return .none
        case .closed:
            return .closeChannel
        }
    }

    /// The peer sent `close_notify`.
    mutating func closeNotifyReceived() -> Action {
        switch self.state {
        case .active:
            self.state = .closing
            return .sendCloseNotifyAndClose(deliverHeldData: true)
        case .awaitingApproval:
            self.state = .closing
            return .sendCloseNotifyAndClose(deliverHeldData: false)
        case .closing, .closed:
            return .none
        case .idle, .handshaking:
            preconditionFailure("Invalid state: \(self.state)")
        }
    }

    /// Decrypting or encrypting application data failed.
    mutating func connectionFailed(_ error: TLSError) -> Action {
        switch self.state {
        case .closed:
            return .none
        case .idle, .handshaking, .awaitingApproval, .active, .closing:
            self.state = .closed
            return .failAndClose(error)
        }
    }

    /// The socket closed.
    mutating func channelInactive() -> Action {
        let previous = self.state
        self.state = .closed
        switch previous {
        case .idle, .closing, .closed:
            return .fireInactive(nil)
        case .handshaking:
            return .fireInactive(.closedDuringHandshake("the connection closed during the handshake"))
        case .awaitingApproval, .active:
            return .fireInactive(self.reportsUncleanShutdown ? .uncleanShutdown : nil)
        }
    }
}
