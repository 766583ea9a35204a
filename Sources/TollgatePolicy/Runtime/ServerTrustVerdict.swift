public import Logging
public import TollgateSession

/// Something the trust policy logs (one line) and counts: a refusal, a reported pin mismatch, a
/// connection accepted without verification.
public struct TrustEvent: Sendable, CustomStringConvertible {
    /// What happened.
    public enum Kind: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
        /// The host's rule says `trust.deny`.
        case denied
        /// OpenSSL did not trust the chain against the rule's roots (or no certificate came, or a
        /// revocation list the rule names could not settle it: none from an issuer, or expired).
        case untrusted
        /// A certificate of the chain is revoked by a list of the rule's `crls`: refused.
        case revoked
        /// No certificate of the verified chain had a pin, and the pins are enforced: refused.
        case pinMismatch = "pin-mismatch"
        /// No certificate of the verified chain had a pin, and the pins are only reported
        /// (`pin-mode: report`, or past `pins-expire`): accepted.
        case pinReport = "pin-report"
        /// `insecure: true`: accepted without verification.
        case insecure
        /// The rule's `client-identity` files could not be loaded: the connection fails.
        case clientIdentity = "client-identity"
        /// A PEM bundle of the rule's `roots` could not be read: the connection fails.
        case rootsUnreadable = "roots-unreadable"
        /// A file of the rule's `crls` could not be read: the connection fails.
        case crlsUnreadable = "crls-unreadable"

        /// Whether it counts as a TLS trust failure of the host (``TrustFailureCounter/byHost``).
        public var isTrustFailure: Bool {
            switch self {
            case .denied, .untrusted, .revoked, .pinMismatch, .pinReport: true
            case .insecure, .clientIdentity, .rootsUnreadable, .crlsUnreadable: false
            }
        }

        /// The level it is logged at: refusals are errors; reports and insecure connections warnings.
        public var logLevel: Logger.Level {
            switch self {
            case .denied, .untrusted, .revoked, .pinMismatch, .clientIdentity, .rootsUnreadable, .crlsUnreadable: .error
            case .pinReport, .insecure: .warning
            }
        }

        public var description: String { rawValue }
    }

    /// What happened.
    public var kind: Kind
    /// The host connected to.
    public var host: String
    /// Its port.
    public var port: Int
    /// The rule that decided, `hosts[INDEX]:FIRST-PATTERN`, or `-` when none matched.
    public var rule: String
    /// The log line: host, rule, what was expected and what was presented (each certificate's pin
    /// and subject). No secrets.
    public var message: String

    /// Creates an event.
    public init(kind: Kind, host: String, port: Int, rule: String, message: String) {
        self.kind = kind
        self.host = host
        self.port = port
        self.rule = rule
        self.message = message
    }

    public var description: String { message }
}

/// The trust policy's answer to one server-trust challenge
/// (``PolicySessionDelegate/serverTrustVerdict(host:port:evaluation:now:)``): the outcome, and the
/// event to log and count, if any.
public struct ServerTrustVerdict: Sendable {
    /// What happens to the connection.
    public enum Outcome: Sendable {
        /// OpenSSL trusted the chain and the pins matched (or were only reported, or there are none).
        case trusted
        /// Accepted as it is without verification (`insecure: true`).
        case acceptedInsecure
        /// Refused; the task fails with this error.
        case refused(SessionError)
    }

    /// What happens to the connection.
    public var outcome: Outcome
    /// What to log and count; nil when there is nothing to say (a trusted chain whose pins matched).
    public var event: TrustEvent?

    /// Creates a verdict.
    public init(outcome: Outcome, event: TrustEvent?) {
        self.outcome = outcome
        self.event = event
    }

    /// The error the task fails with, nil when the connection is accepted.
    public var error: SessionError? {
        if case .refused(let error) = outcome { return error }
        return nil
    }

    /// The answer to the challenge: default handling for a chain OpenSSL trusted (so the session
    /// checks the verdict again), the chain accepted as is for `insecure`, cancel with the error.
    public var disposition: ChallengeDisposition {
        switch outcome {
        case .trusted: .performDefaultHandling
        case .acceptedInsecure: .useCredential(.serverTrust)
        case .refused(let error): .cancelAuthenticationChallenge(reason: error)
        }
    }
}
