/// A certificate chain and the private key of its first certificate: what a TLS endpoint presents.
public struct Identity: Sendable {
    /// The leaf first, then the intermediates up to (not including) the root.
    public let certificateChain: [Certificate]

    /// The private key for ``certificate``.
    public let privateKey: PrivateKey

    /// The leaf certificate.
    public var certificate: Certificate { self.certificateChain[0] }

    /// Servers: the OCSP response about ``certificate`` stapled to handshakes of clients that
    /// ask for one (`status_request`), while it is current. Nil (the default): none stapled.
    public var ocspResponse: OCSPResponse?

    /// An identity from a chain and the leaf's key.
    ///
    /// - Parameters:
    ///   - certificateChain: the leaf first, then intermediates; must not be empty.
    ///   - privateKey: the key matching the leaf's public key.
    /// - Throws: ``OpenSSLError/invalidArgument`` when the chain is empty or the key does not match the leaf.
    public init(certificateChain: [Certificate], privateKey: PrivateKey) throws {
        guard let leaf = certificateChain.first else {
            throw OpenSSLError(.invalidArgument, exactly: "an identity needs at least one certificate")
        }
        try leaf.requireMatch(privateKey)
        self.certificateChain = certificateChain
        self.privateKey = privateKey
    }

    /// An identity whose parts are known to fit (freshly issued).
    init(unchecked certificateChain: [Certificate], privateKey: PrivateKey) {
        self.certificateChain = certificateChain
        self.privateKey = privateKey
    }
}
