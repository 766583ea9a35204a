import TollgateHTTP

/// The header fields that describe one connection rather than the message (RFC 9110 §7.6.1),
/// which a proxy must not pass on.
enum HopByHopHeaders {
    /// Always connection-specific, whatever `Connection` says.
    static let fixed: [String] = [
        "Connection", "Keep-Alive", "Proxy-Connection", "TE", "Trailer", "Transfer-Encoding", "Upgrade",
        "Proxy-Authorization", "Proxy-Authenticate",
    ]

    /// `fields` without the fixed hop-by-hop fields and without the fields `Connection` names
    /// (returned as they are when there is none: the common case costs no copy).
    static func removing(from fields: HeaderFields) -> HeaderFields {
        var named: [String] = []
        for value in fields.values(for: "Connection") {
            for token in value.split(separator: ",") {
                let name = String(token).trimmingASCIIWhitespace()
                if !name.isEmpty { named.append(name) }
            }
        }
        func isHopByHop(_ field: HeaderFields.Field) -> Bool {
            fixed.contains { $0.equalsIgnoringASCIICase(field.name) }
                || named.contains { $0.equalsIgnoringASCIICase(field.name) }
        }
        guard fields.contains(where: isHopByHop) else { return fields }
        var result = fields
        result.removeAll(where: isHopByHop)
        return result
    }

    /// Whether the `Connection` field of `fields` lists `token` (case-insensitive).
    static func connectionLists(_ token: String, in fields: HeaderFields) -> Bool {
        fields.values(for: "Connection").contains { value in
            value.split(separator: ",").contains { String($0).trimmingASCIIWhitespace().equalsIgnoringASCIICase(token) }
        }
    }
}
