import TollgateHTTP

/// The header fields that describe one connection rather than the message (RFC 9110 §7.6.1),
/// which a proxy must not pass on.
enum HopByHopHeaders {
    /// Always connection-specific, whatever `Connection` says.
    static let fixed: [String] = [
        "Connection", "Keep-Alive", "Proxy-Connection", "TE", "Trailer", "Transfer-Encoding", "Upgrade",
        "Proxy-Authorization", "Proxy-Authenticate",
    ]
    /// The name keys of ``fixed``: a field whose key is not among them is not a fixed one.
    private static let fixedKeys: [UInt32] = fixed.map(HeaderFields.Field.nameKey(of:))

    /// `fields` without the fixed hop-by-hop fields and without the fields `Connection` names
    /// (returned as they are when there is none: the common case costs no copy).
    static func removing(from fields: HeaderFields) -> HeaderFields {
        // The names Connection lists: only those that may name a field present are kept as
        // strings (most are `keep-alive` or `close`, naming nothing), so the usual response
        // costs no string and no split.
        var named: [String] = []
        var namedKeys: [UInt32] = []
        for value in fields.values(for: "Connection") {
            FieldList.forEachToken(in: value) { token in
                let key = HeaderFields.Field.nameKey(ofBytes: token.utf8)
                if fields.containsNameKey(where: { $0 == key }) {
                    named.append(String(token))
                    namedKeys.append(key)
                }
            }
        }
        func isHopByHop(_ field: borrowing HeaderFields.Field) -> Bool {
            (fixedKeys.contains(field.nameKey) && fixed.contains { $0.equalsIgnoringASCIICase(field.name) })
                || (namedKeys.contains(field.nameKey) && named.contains { $0.equalsIgnoringASCIICase(field.name) })
        }
        // Keys first: most messages have no hop-by-hop field, and keys are compared without
        // touching (and retaining) any name.
        guard fields.containsNameKey(where: { fixedKeys.contains($0) || namedKeys.contains($0) }),
            fields.contains(where: isHopByHop)
        else { return fields }
        var result = fields
        result.removeAll(where: isHopByHop)
        return result
    }
}
