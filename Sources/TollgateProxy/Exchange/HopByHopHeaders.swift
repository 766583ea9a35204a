import TollgateHTTP

/// The header fields that describe one connection rather than the message (RFC 9110 §7.6.1),
/// which a proxy must not pass on.
enum HopByHopHeaders {
    /// Always connection-specific, whatever `Connection` says.
    static let fixed: [String] = [
        "Connection", "Keep-Alive", "Proxy-Connection", "TE", "Trailer", "Transfer-Encoding", "Upgrade",
        "Proxy-Authorization", "Proxy-Authenticate",
    ]

    private static let fixedLowercased = Set(fixed.map { $0.lowercased() })

    /// `fields` without the fixed hop-by-hop fields and without the fields `Connection` names.
    static func removing(from fields: HeaderFields) -> HeaderFields {
        var named = Set<String>()
        for value in fields.values(for: "Connection") {
            for token in value.split(separator: ",") {
                let name = String(token).trimmingASCIIWhitespace().lowercased()
                if !name.isEmpty { named.insert(name) }
            }
        }
        var result = fields
        result.removeAll { field in
            let name = field.name.lowercased()
            return fixedLowercased.contains(name) || named.contains(name)
        }
        return result
    }

    /// Whether the `Connection` field of `fields` lists `token` (case-insensitive).
    static func connectionLists(_ token: String, in fields: HeaderFields) -> Bool {
        fields.values(for: "Connection").contains { value in
            value.split(separator: ",").contains { String($0).trimmingASCIIWhitespace().equalsIgnoringASCIICase(token) }
        }
    }
}
