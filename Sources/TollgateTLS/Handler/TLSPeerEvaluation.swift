/// What a completed handshake established about the peer: the negotiated parameters, the chain it
/// presented, the chain OpenSSL verified, and OpenSSL's verdict.
///
/// This is the input to the session's trust decision: pins are checked against ``verifiedChain`` (DESIGN.md
/// "Pinning with OpenSSL"), and a server-trust challenge sees ``trustResult``. Sessions are never resumed,
/// so the verified chain is always there when the chain verified.
public struct TLSPeerEvaluation: Hashable, Sendable {
    /// OpenSSL's verdict on the peer's chain.
    public enum TrustResult: Hashable, Sendable {
        /// The chain leads to a trust root and (when checked) the leaf is valid for the host.
        case trusted
        /// Verification failed; the error is the first one OpenSSL reported (code, depth, subject, host).
        case untrusted(CertificateVerificationError)
        /// The peer presented no certificate: a client of a server that requested but did not require one,
        /// or a server whose client did not ask for its chain to be checked.
        case noCertificate
    }

    /// The negotiated protocol version.
    public let protocolVersion: TLSVersion

    /// The ALPN protocol both sides agreed on, or nil when none was.
    public let applicationProtocol: String?

    /// The negotiated cipher suite, as OpenSSL names it (`TLS_AES_256_GCM_SHA384`).
    public let cipherSuite: String

    /// For a client, the host name it sent in SNI (nil for an IP address); for a server, the one it
    /// received.
    public let serverName: String?

    /// The peer's chain as it was sent: the leaf first. Empty when the peer sent no certificate.
    public let presentedChain: [Certificate]

    /// The chain OpenSSL built and verified, from the leaf to the trust anchor; empty unless
    /// ``trustResult`` is ``TrustResult/trusted``.
    public let verifiedChain: [Certificate]

    /// OpenSSL's verdict on ``presentedChain``.
    public let trustResult: TrustResult

    /// For a client without an identity: the server asked for a client certificate (a
    /// CertificateRequest), and none was sent. The server may then refuse the connection; a session
    /// raises the client-certificate challenge. False for servers and for clients with an identity.
    public var clientCertificateRequested: Bool = false

    /// For a client that asked (``TLSConfiguration/requestsCertificateStatus``): the OCSP response
    /// the server stapled (DER), unchecked; nil when it stapled none.
    public var stapledOCSPResponse: [UInt8]? = nil

    /// The peer's leaf certificate, when it sent one.
    public var peerCertificate: Certificate? { self.presentedChain.first }

    /// Whether ``trustResult`` is ``TrustResult/trusted``.
    public var isTrusted: Bool { self.trustResult == .trusted }
}

/// The user inbound event a ``TLSHandler`` fires when its handshake completes.
///
/// When the configuration defers the trust decision, the handler holds application data in both
/// directions until ``TLSHandler/approvePeer()``; the receiver of this event decides (pins, server-trust
/// challenge) and approves or closes the channel.
public struct TLSHandshakeCompleted: Hashable, Sendable {
    /// What the handshake established.
    public let evaluation: TLSPeerEvaluation

    /// Whether application data is held until ``TLSHandler/approvePeer()``.
    public let awaitsApproval: Bool
}
