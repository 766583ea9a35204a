/// A TLS connection failed, or ended in a way the application should know about.
///
/// Compare with the static members to tell kinds apart: equality looks at the kind only. Messages carry
/// OpenSSL's reason strings and alert names, never key material.
///
/// ```swift
/// if let error = error as? TLSError, error == .peerUntrusted { print(error.verificationError!) }
/// ```
public struct TLSError: Error, Hashable, CustomStringConvertible, Sendable {
    private enum Code: String, Sendable {
        case handshakeFailed
        case handshakeTimeout
        case peerUntrusted
        case alertReceived
        case uncleanShutdown
        case connectionFailed
        case invalidConfiguration
    }

    private let code: Code

    /// What happened, with OpenSSL's reason when there is one.
    public let message: String

    /// For ``peerUntrusted``: OpenSSL's verdict on the peer's chain.
    public let verificationError: CertificateVerificationError?

    /// For ``alertReceived``: the alert the peer sent, as OpenSSL names it ("certificate required",
    /// "handshake failure", "protocol version", …).
    public let alert: String?

    /// For ``handshakeFailed``: the failure was the peer closing the connection (or its TLS
    /// session) before the handshake completed, not a message that went wrong. A server tells a
    /// client that left (a port check, a client that gave up) from one that spoke no TLS.
    public let peerClosed: Bool

    private init(
        code: Code,
        message: String,
        verificationError: CertificateVerificationError? = nil,
        alert: String? = nil,
        peerClosed: Bool = false
    ) {
        self.code = code
        self.message = message
        self.verificationError = verificationError
        self.alert = alert
        self.peerClosed = peerClosed
    }

    /// The handshake failed locally: no common version or cipher, a malformed message, the connection
    /// closed mid-handshake, a missing client certificate on a server that requires one, …
    public static let handshakeFailed = TLSError(code: .handshakeFailed, message: "TLS handshake failed")
    /// The handshake did not finish within ``TLSConfiguration/handshakeTimeout``.
    public static let handshakeTimeout = TLSError(code: .handshakeTimeout, message: "TLS handshake timed out")
    /// The peer's certificate chain failed verification and trust was not deferred; see
    /// ``verificationError``.
    public static let peerUntrusted = TLSError(code: .peerUntrusted, message: "TLS peer certificate untrusted")
    /// The peer sent a fatal alert; see ``alert``.
    public static let alertReceived = TLSError(code: .alertReceived, message: "TLS alert received")
    /// The peer closed the connection without `close_notify`: data may have been cut short. Fired before
    /// `channelInactive`; the connection is otherwise treated as ended by EOF.
    public static let uncleanShutdown = TLSError(
        code: .uncleanShutdown,
        message: "TLS connection closed without close_notify"
    )
    /// Reading or writing application data failed after the handshake (a bad record MAC, …).
    public static let connectionFailed = TLSError(code: .connectionFailed, message: "TLS connection failed")
    /// A ``TLSConfiguration`` or handler argument cannot work (an ALPN name too long, a server without an
    /// identity, full verification without a host name, …).
    public static let invalidConfiguration = TLSError(
        code: .invalidConfiguration,
        message: "invalid TLS configuration"
    )

    static func handshakeFailed(_ reason: String) -> TLSError {
        TLSError(code: .handshakeFailed, message: "TLS handshake failed: \(reason)")
    }

    static func peerUntrusted(_ error: CertificateVerificationError) -> TLSError {
        TLSError(code: .peerUntrusted, message: "TLS peer untrusted: \(error)", verificationError: error)
    }

    static func alertReceived(_ alert: String, duringHandshake: Bool) -> TLSError {
        let when = duringHandshake ? "during the handshake" : "after the handshake"
        return TLSError(code: .alertReceived, message: "TLS alert received \(when): \(alert)", alert: alert)
    }

    /// ``handshakeFailed`` because the peer closed before the handshake completed (``peerClosed``).
    static func closedDuringHandshake(_ reason: String) -> TLSError {
        TLSError(code: .handshakeFailed, message: "TLS handshake failed: \(reason)", peerClosed: true)
    }

    static func connectionFailed(_ reason: String) -> TLSError {
        TLSError(code: .connectionFailed, message: "TLS connection failed: \(reason)")
    }

    static func invalidConfiguration(_ reason: String) -> TLSError {
        TLSError(code: .invalidConfiguration, message: "invalid TLS configuration: \(reason)")
    }

    static func handshakeTimeout(after timeout: String) -> TLSError {
        TLSError(code: .handshakeTimeout, message: "TLS handshake timed out after \(timeout)")
    }

    /// A short, stable name of the kind, without details (fit for a metric label).
    public var shortDescription: String { self.code.rawValue }

    /// The message.
    public var description: String { self.message }

    /// Errors are equal when they are of the same kind, whatever their details.
    public static func == (lhs: TLSError, rhs: TLSError) -> Bool { lhs.code == rhs.code }

    /// Hashes the kind only, to agree with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(self.code) }
}
