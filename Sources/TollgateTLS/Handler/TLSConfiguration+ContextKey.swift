import NIOCore

extension TLSConfiguration {
    /// Every field of a configuration in a comparable form: what ``TLSContextCache`` keys on.
    ///
    /// Per-connection settings (timeouts, deferral) are part of the key too, because a handler reads them
    /// from its context's configuration.
    struct ContextKey: Hashable, Sendable {
        var minimumVersion: TLSVersion
        var maximumVersion: TLSVersion?
        var trustRoots: TrustRoots
        var certificateVerification: CertificateVerification
        var deferTrustDecision: Bool
        var applicationProtocols: [String]
        /// The identity's chain; its key is the one matching the leaf, so the chain identifies it.
        var identityChain: [Certificate]?
        /// The identity's stapled OCSP response (it changes while the chain stays).
        var identityOCSPResponse: OCSPResponse?
        var clientCertificateRequirement: ClientCertificateRequirement
        var clientCertificatePins: [SPKIPin]
        var handshakeTimeout: TimeAmount
        var closeTimeout: TimeAmount
        var reportsUncleanShutdown: Bool
        var issuesSessionTickets: Bool
        var sessionTicketKeys: [SessionTicketKey]
        var sessionTicketKeyRotation: Duration
        var requestsCertificateStatus: Bool
    }

    /// The key, or nil when the configuration has a closure or a staple store and cannot be compared.
    var contextKey: ContextKey? {
        guard self.serverNameHandler == nil, self.ocspStaples == nil else { return nil }
        return ContextKey(
            minimumVersion: self.minimumVersion,
            maximumVersion: self.maximumVersion,
            trustRoots: self.trustRoots,
            certificateVerification: self.certificateVerification,
            deferTrustDecision: self.deferTrustDecision,
            applicationProtocols: self.applicationProtocols,
            identityChain: self.identity?.certificateChain,
            identityOCSPResponse: self.identity?.ocspResponse,
            clientCertificateRequirement: self.clientCertificateRequirement,
            clientCertificatePins: self.clientCertificatePins,
            handshakeTimeout: self.handshakeTimeout,
            closeTimeout: self.closeTimeout,
            reportsUncleanShutdown: self.reportsUncleanShutdown,
            issuesSessionTickets: self.issuesSessionTickets,
            sessionTicketKeys: self.sessionTicketKeys,
            sessionTicketKeyRotation: self.sessionTicketKeyRotation,
            requestsCertificateStatus: self.requestsCertificateStatus
        )
    }
}
