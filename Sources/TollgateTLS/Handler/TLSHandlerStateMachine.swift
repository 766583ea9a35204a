/// The life of one TLS connection as ``TLSHandler`` sees it: events in, actions out, no I/O.
///
/// ```
/// idle ──channelActive──▶ handshaking ──completed──▶ active ──close / close_notify──▶ closing ──inactive──▶ closed
///                              │          (deferred) ──▶ awaitingApproval ──peerApproved──▶ active
///                              └──failed / timed out──▶ closed (a server: lingering ──EOF / linger over──▶ closed)
/// active ──close(.output)──▶ outputClosed ──close_notify / close──▶ closing
/// active ──close_notify, half-closure allowed──▶ inputClosed ──close(.output) / close──▶ closing
/// ```
///
/// `awaitingApproval` is `active` with application data held in both directions until the application
/// has checked the peer (pins, a server-trust challenge) and called ``TLSHandler/approvePeer()``.
///
/// Half-closing is TLS's own: `close_notify` ends one direction (RFC 8446 §6.1: "each party MUST send
/// a close_notify alert before closing its write side"), the other goes on. Our `close(mode: .output)`
/// sends it and keeps reading (`outputClosed`); the peer's, on a channel that allows remote half-closure,
/// ends reading with a `ChannelEvent.inputClosed` and keeps writing (`inputClosed`), as a socket's EOF
/// does. Without half-closure allowed, the peer's `close_notify` closes the channel, as before.
///
/// A server whose handshake failed sends its alert, half-closes the socket and reads (dropping what
/// comes) until the client's EOF or the close timeout (`lingering`), as nginx's lingering close does:
/// closing a socket with the client's unread bytes in it (a TLS 1.3 client sends its request with
/// its Finished) resets the connection, and the reset can destroy the alert before the client reads
/// it — the client would learn only "connection reset", not "bad certificate".
struct TLSHandlerStateMachine {
    private enum State: Equatable {
        case idle
        case handshaking
        case awaitingApproval
        case active
        /// Our `close_notify` is sent; the peer's data is still read.
        case outputClosed
        /// The peer's `close_notify` arrived (half-closure allowed); we may still write.
        case inputClosed
        case closing
        /// A server's handshake failed: the alert is out, reading on until the client's EOF.
        case lingering
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
        /// plaintext still held, and with `fireInputClosed` then tell the next handler its input ended.
        case sendCloseNotifyAndClose(deliverHeldData: Bool, fireInputClosed: Bool = false)
        /// Encrypt the flushed writes, send `close_notify`, go on reading (a half-close of ours).
        case sendCloseNotify
        /// Deliver the decrypted plaintext still held, then fire `ChannelEvent.inputClosed` (the peer's
        /// half-close).
        case deliverHeldDataAndFireInputClosed
        /// Refuse a half-close (before the data flows, or after the close).
        case refuseOutputClose
        /// Close the channel without a TLS shutdown.
        case closeChannel
        /// Send what OpenSSL queued (an alert), fire the error, close the channel.
        case failAndClose(TLSError)
        /// Send what OpenSSL queued (an alert), fire the error, half-close the socket once it is
        /// written and read until the peer's EOF or the close timeout (a server's failed handshake).
        case failAndLinger(TLSError)
        /// Fire the error, if any, then `channelInactive`; fail what is still held.
        case fireInactive(TLSError?)
    }

    private var state: State = .idle
    private let defersTrustDecision: Bool
    private let reportsUncleanShutdown: Bool
    /// A failed handshake lingers (a server's) rather than closing at once.
    private let lingersAfterFailure: Bool

    init(defersTrustDecision: Bool, reportsUncleanShutdown: Bool, lingersAfterFailure: Bool = false) {
        self.defersTrustDecision = defersTrustDecision
        self.reportsUncleanShutdown = reportsUncleanShutdown
        self.lingersAfterFailure = lingersAfterFailure
    }

    /// Whether OpenSSL should be handed ciphertext to decrypt.
    var decryptsApplicationData: Bool {
        self.state == .awaitingApproval || self.state == .active || self.state == .outputClosed
    }

    /// Whether decrypted data may go to the next handler.
    var deliversApplicationData: Bool { self.state == .active || self.state == .outputClosed }

    /// Whether writes may be encrypted and sent.
    var encryptsApplicationData: Bool { self.state == .active || self.state == .inputClosed }

    /// Whether our `close_notify` has ended the writing side while the channel is still open.
    var isOutputClosed: Bool { self.state == .outputClosed }

    /// Whether the peer's `close_notify` ended the reading side while the channel is still open.
    var isInputClosed: Bool { self.state == .inputClosed }

    /// Whether the handshake is under way.
    var isHandshaking: Bool { self.state == .handshaking }

    /// Whether the channel is closing or closed.
    var isClosingOrClosed: Bool { self.state == .closing || self.state == .lingering || self.state == .closed }

    /// Whether a failed handshake's connection is lingering for the peer's EOF.
    var isLingering: Bool { self.state == .lingering }

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
        if self.lingersAfterFailure {
            self.state = .lingering
            return .failAndLinger(error)
        }
        self.state = .closed
        return .failAndClose(error)
    }

    /// The peer's EOF, or the close timeout, while lingering.
    mutating func lingerEnded() -> Action {
        guard self.state == .lingering else { return .none }
        self.state = .closed
        return .closeChannel
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
        case .active, .outputClosed, .inputClosed, .closing, .lingering, .closed:
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
        case .awaitingApproval, .active, .inputClosed:
            self.state = .closing
            return .sendCloseNotifyAndClose(deliverHeldData: false)
        case .outputClosed:
            // Our close_notify is already out.
            self.state = .closing
            return .closeChannel
        case .closing, .lingering:
            return .none  // the close under way (or the linger's end) completes the promise
        case .closed:
            return .closeChannel
        }
    }

    /// The application half-closed the channel (`close(mode: .output)`).
    mutating func outputCloseRequested() -> Action {
        switch self.state {
        case .active:
            self.state = .outputClosed
            return .sendCloseNotify
        case .inputClosed:
            // Both directions are done.
            self.state = .closing
            return .sendCloseNotifyAndClose(deliverHeldData: false)
        case .outputClosed, .closing, .lingering:
            return .none
        case .idle, .handshaking, .awaitingApproval, .closed:
            return .refuseOutputClose
        }
    }

    /// The peer sent `close_notify`; `halfClosureAllowed`: the channel's `allowRemoteHalfClosure`.
    mutating func closeNotifyReceived(halfClosureAllowed: Bool = false) -> Action {
        switch self.state {
        case .active where halfClosureAllowed:
            self.state = .inputClosed
            return .deliverHeldDataAndFireInputClosed
        case .active:
            self.state = .closing
            return .sendCloseNotifyAndClose(deliverHeldData: true)
        case .outputClosed:
            // Each side has closed its half: the connection is done.
            self.state = .closing
            return .sendCloseNotifyAndClose(deliverHeldData: true, fireInputClosed: halfClosureAllowed)
        case .awaitingApproval:
            self.state = .closing
            return .sendCloseNotifyAndClose(deliverHeldData: false)
        case .inputClosed, .closing, .lingering, .closed:
            return .none
        case .idle, .handshaking:
            preconditionFailure("Invalid state: \(self.state)")
        }
    }

    /// Decrypting or encrypting application data failed.
    mutating func connectionFailed(_ error: TLSError) -> Action {
        switch self.state {
        case .closed, .lingering:
            return .none
        case .idle, .handshaking, .awaitingApproval, .active, .outputClosed, .inputClosed, .closing:
            self.state = .closed
            return .failAndClose(error)
        }
    }

    /// The socket closed.
    mutating func channelInactive() -> Action {
        let previous = self.state
        self.state = .closed
        switch previous {
        case .idle, .inputClosed, .closing, .lingering, .closed:
            return .fireInactive(nil)
        case .handshaking:
            return .fireInactive(.closedDuringHandshake("the connection closed during the handshake"))
        case .awaitingApproval, .active, .outputClosed:
            return .fireInactive(self.reportsUncleanShutdown ? .uncleanShutdown : nil)
        }
    }
}
