import TollgateTLS

/// The certificates of a TLS listener and which one a client gets for the name it sent in SNI:
/// the first whose DNS names (subjectAltName) match the name exactly, else the first whose
/// wildcard name matches it, else the first certificate (the default, also for a client that
/// sent no name). A wildcard is a whole leftmost label and stands for exactly one label, as
/// clients check it (`*.example.com` matches `a.example.com`, not `example.com` nor
/// `a.b.example.com`, RFC 6125 §6.4.3).
struct ServerCertificates: Sendable {
    /// The identities in configuration order; the first is the default.
    let identities: [Identity]
    /// Each identity's DNS names, lowercased.
    private let names: [[String]]

    /// - Parameter identities: at least one; the first is the default.
    init(_ identities: [Identity]) {
        precondition(!identities.isEmpty, "a TLS listener needs a certificate")
        self.identities = identities
        self.names = identities.map { identity in
            identity.certificate.subjectAlternativeNames.compactMap { name in
                if case .dnsName(let dns) = name { return dns.lowercased() }
                return nil
            }
        }
    }

    /// The default certificate.
    var defaultIdentity: Identity { identities[0] }

    /// The index of the certificate for `serverName` (0, the default, when none matches).
    func index(forServerName serverName: String?) -> Int {
        guard var name = serverName?.lowercased(), !name.isEmpty else { return 0 }
        if name.hasSuffix(".") { name.removeLast() }
        if let exact = names.firstIndex(where: { $0.contains(name) }) { return exact }
        guard let dot = name.firstIndex(of: "."), dot != name.startIndex else { return 0 }
        let wildcard = "*" + name[dot...]
        return names.firstIndex { $0.contains(wildcard) } ?? 0
    }

    /// For ``TLSConfiguration/serverNameHandler``: the identity for `serverName`, or nil for the
    /// default (which the context already holds, so OpenSSL has nothing to switch).
    func identity(forServerName serverName: String?) -> Identity? {
        let index = index(forServerName: serverName)
        return index == 0 ? nil : identities[index]
    }
}
