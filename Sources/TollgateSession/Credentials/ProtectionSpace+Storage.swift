import Foundation

/// How credentials are filed and matched (``CredentialStorage``).
extension ProtectionSpace {
    /// The space with its host lowercased: spaces are compared with the host case-insensitively.
    var normalized: ProtectionSpace {
        var copy = self
        copy.host = host.lowercased()
        copy.protocol = self.protocol.lowercased()
        return copy
    }

    /// The text a space is filed under: protocol, host, port, method and realm (nil: any realm)
    /// separated by NUL, so no two spaces share one.
    var storageKey: String {
        let space = normalized
        let realmPart = space.realm.map { "=" + $0 } ?? "*"
        return
            "\(space.protocol)://\(space.host):\(space.port)\u{0}\(space.authenticationMethod.rawValue)\u{0}\(realmPart)"
    }

    /// The space a storage key names, or nil.
    init?(storageKey: String) {
        let parts = storageKey.split(separator: "\u{0}", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, let schemeEnd = parts[0].range(of: "://"),
            let colon = parts[0].lastIndex(of: ":"), colon > schemeEnd.upperBound,
            let port = Int(parts[0][parts[0].index(after: colon)...])
        else { return nil }
        let realm: String? = parts[2].first == "=" ? String(parts[2].dropFirst()) : nil
        self.init(
            host: String(parts[0][schemeEnd.upperBound..<colon]),
            port: port,
            protocol: String(parts[0][..<schemeEnd.lowerBound]),
            realm: realm,
            authenticationMethod: Self.method(named: String(parts[1]))
        )
    }

    /// The method a stored name stands for.
    static func method(named name: String) -> AuthenticationMethod {
        let known: [AuthenticationMethod] = [
            .httpBasic, .httpDigest, .ntlm, .negotiate, .serverTrust, .clientCertificate,
        ]
        return known.first { $0.rawValue == name.lowercased() } ?? .other(name)
    }

    /// The stored spaces whose credentials may answer a challenge for this space, best first:
    /// this space; the same server and method with any realm (a space stored without realm);
    /// and for Digest the same two for Basic — a password stored for Basic may be sent hashed
    /// with Digest, but one stored for Digest is never sent in clear with Basic.
    var lookupOrder: [ProtectionSpace] {
        let space = normalized
        var order = [space]
        var anyRealm = space
        anyRealm.realm = nil
        if space.realm != nil { order.append(anyRealm) }
        if space.authenticationMethod == .httpDigest {
            var basic = space
            basic.authenticationMethod = .httpBasic
            order.append(basic)
            if space.realm != nil {
                basic.realm = nil
                order.append(basic)
            }
        }
        return order
    }
}

/// A credential as stored: user and password, or a client identity. Persistence is where it is
/// stored, so it is not part of the record.
struct StoredCredential: Codable, Hashable, Sendable {
    var user: String?
    var password: String?
    var certificatePath: String?
    var keyPath: String?

    init(_ credential: Credential) {
        user = credential.user
        password = credential.password
        certificatePath = credential.clientIdentity?.certificatePath
        keyPath = credential.clientIdentity?.keyPath
    }

    func credential(persistence: Credential.Persistence) -> Credential {
        if let certificatePath, let keyPath {
            return Credential(clientCertificatePath: certificatePath, keyPath: keyPath, persistence: persistence)
        }
        return Credential(user: user ?? "", password: password ?? "", persistence: persistence)
    }
}

extension Credential {
    /// The name a credential is filed under within its space: the user, or "" for a client identity.
    var storageUser: String { user ?? "" }
}
