import NIOCore

/// Everything that decides how a TLS endpoint behaves: versions, trust, identity, ALPN and timeouts.
///
/// A value type: build one with ``makeClientConfiguration()`` or ``makeServerConfiguration(identity:)``,
/// change fields, then turn it into a ``TLSContext`` (directly, or through a ``TLSContextCache`` so that
/// equal configurations share one OpenSSL context). A context copies the configuration; changing the value
/// afterwards does not change the context.
///
/// ```swift
/// var configuration = TLSConfiguration.makeClientConfiguration()
/// configuration.trustRoots = TrustRoots(includesSystemRoots: true, pemFiles: ["/etc/tollgate/internal-ca.pem"])
/// configuration.deferTrustDecision = true  // the session runs its pin check first
/// let context = try TLSContext(configuration: configuration)
/// ```
public struct TLSConfiguration: Sendable {
    /// The lowest protocol version accepted; ``TLSVersion/tlsv1_2`` unless set.
    public var minimumVersion: TLSVersion = .tlsv1_2

    /// The highest protocol version offered or accepted; nil (the highest OpenSSL supports) unless set.
    public var maximumVersion: TLSVersion? = nil

    /// The anchors the peer's chain must lead to: ``TrustRoots/system`` for clients, ``TrustRoots/empty``
    /// for servers (which use it for client certificates).
    public var trustRoots: TrustRoots = .system

    /// How much of the peer's certificate is checked; ``CertificateVerification/fullVerification`` unless
    /// set. Servers check client certificates only when ``clientCertificateRequirement`` asks for them, and
    /// never against a host name.
    public var certificateVerification: CertificateVerification = .fullVerification

    /// When true, a chain that fails verification does not fail the handshake: the handshake completes,
    /// ``TLSHandshakeCompleted`` reports ``TLSPeerEvaluation/TrustResult/untrusted(_:)``, and no application
    /// data moves in either direction until ``TLSHandler/approvePeer()``. When false (the default), such a
    /// chain fails the handshake with ``TLSError/peerUntrusted`` and data flows as soon as the handshake
    /// completes.
    public var deferTrustDecision: Bool = false

    /// ALPN protocols, most preferred first: offered by a client, chosen from by a server (the server's
    /// order wins). `["http/1.1"]` for clients, none for servers, unless set. Each is 1 to 255 bytes.
    public var applicationProtocols: [String] = []

    /// The certificate chain and key this endpoint presents: the client certificate for a client (nil: none,
    /// the default), the server certificate for a server.
    public var identity: Identity? = nil

    /// Servers only: whether clients are asked for a certificate; ``ClientCertificateRequirement/notRequested``
    /// unless set.
    public var clientCertificateRequirement: ClientCertificateRequirement = .notRequested

    /// Servers only: the SPKI pins a client's verified chain must hold one of (its own key, or an
    /// issuing CA's). Checked in the handshake once OpenSSL has verified the chain: a client with no
    /// match gets a `bad_certificate` alert, and the handshake fails with
    /// ``TLSError/peerUntrusted`` (``CertificateVerificationError/Code/certificateRejected``). Empty
    /// (the default): no pins.
    public var clientCertificatePins: [SPKIPin] = []

    /// Servers only: whether clients are given session tickets, with which a client that connects
    /// again resumes its session without a full handshake (TLS 1.3 PSK with a fresh key exchange,
    /// TLS 1.2 tickets; stateless: the ticket keys are the context's, made with it). Ignored when
    /// clients are asked for a certificate: a resumed session skips the certificate's check
    /// (revocation lists, pins). A client never resumes, whatever this says (pins are checked on
    /// the verified chain of every connection). False unless set.
    public var issuesSessionTickets: Bool = false

    /// Servers issuing session tickets only: the keys tickets are encrypted with — the first for
    /// new tickets, every one to resume from (a ticket under a later key is resumed and replaced by
    /// one under the first) — so that servers given the same keys, or this server after a restart,
    /// resume each other's sessions (nginx's `ssl_session_ticket_key`). Empty (the default): keys
    /// the context makes itself, known to it alone and replaced every
    /// ``sessionTicketKeyRotation``.
    public var sessionTicketKeys: [SessionTicketKey] = []

    /// Servers issuing session tickets without ``sessionTicketKeys``: how long each key the
    /// context makes seals new tickets before the next is made; a key opens tickets for two
    /// periods more, the tickets' lifetime, and is then forgotten — what one key, once learnt,
    /// exposes is a few periods of sessions, not all since the start. Default: one hour (nginx
    /// rotates its own keys hourly).
    public var sessionTicketKeyRotation: Duration = .seconds(3600)

    /// Clients only: whether the server is asked for its OCSP response (`status_request`); what it
    /// staples is in ``TLSPeerEvaluation/stapledOCSPResponse``, for the application to judge.
    /// False unless set.
    public var requestsCertificateStatus: Bool = false

    /// Servers only: OCSP responses fetched while the server runs, stapled for the certificate
    /// served in preference to its identity's ``Identity/ocspResponse`` (each while current).
    /// Nil (the default): the identities' own alone. A configuration with one is never shared by
    /// ``TLSContextCache`` (its contents change).
    public var ocspStaples: OCSPStaples? = nil

    /// Servers only: picks the identity for the host name a client sent in SNI (nil when it sent none), so
    /// interception can mint a leaf per host. Returning nil keeps ``identity``; if that is nil too, the
    /// handshake fails with an `unrecognized_name` alert. Nil (always ``identity``) unless set.
    ///
    /// Called on the connection's event loop in the middle of the handshake: it must not block for long
    /// (cache minted leaves). A configuration with a handler is never shared by ``TLSContextCache``, since
    /// closures cannot be compared.
    public var serverNameHandler: (@Sendable (String?) -> Identity?)? = nil

    /// How long the handshake may take from the moment the connection is active; 10 seconds unless set.
    /// When it runs out the handler fires ``TLSError/handshakeTimeout`` and closes the channel.
    public var handshakeTimeout: TimeAmount = .seconds(10)

    /// How long closing waits for the `close_notify` alert to be written before the socket is closed anyway;
    /// 5 seconds unless set.
    public var closeTimeout: TimeAmount = .seconds(5)

    /// Whether the peer closing TCP without a `close_notify` alert is reported as
    /// ``TLSError/uncleanShutdown`` (fired before `channelInactive`; the close is still treated as EOF).
    /// True for clients (a response cut short by an attacker looks like this), false for servers (clients
    /// routinely just close), unless set. Application protocols whose framing proves completeness, such as
    /// HTTP with `Content-Length`, may ignore the error.
    public var reportsUncleanShutdown: Bool = true

    /// A configuration with every field at its default; prefer the factories.
    public init() {}

    /// A client: TLS 1.2 and up, system trust roots, full verification, ALPN `http/1.1`, no client
    /// certificate, trust decided in the handshake.
    public static func makeClientConfiguration() -> TLSConfiguration {
        var configuration = TLSConfiguration()
        configuration.applicationProtocols = ["http/1.1"]
        return configuration
    }

    /// A server presenting `identity`: TLS 1.2 and up, no ALPN, no client certificates, clean-shutdown
    /// errors not reported.
    ///
    /// - Parameter identity: the server's certificate chain and key; with a ``serverNameHandler`` it is the
    ///   fallback, and may be nil if the handler always answers.
    public static func makeServerConfiguration(identity: Identity?) -> TLSConfiguration {
        var configuration = TLSConfiguration()
        configuration.identity = identity
        configuration.trustRoots = .empty
        configuration.reportsUncleanShutdown = false
        return configuration
    }
}
