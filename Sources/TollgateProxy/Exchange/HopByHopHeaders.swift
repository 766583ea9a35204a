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
    /// ``HeaderFields/keyBit(_:)`` of every fixed key: a list with none of these bits has no
    /// fixed hop-by-hop field, `Connection` among them (the usual stored response). Not a
    /// `HeaderNameList`: ``Omission/omits(_:)`` runs per line, and through a list (or a closure
    /// over the omission) it cost an allocation or ~16 retains per response.
    private static let fixedKeyMask: UInt64 = fixedKeys.reduce(0) { $0 | HeaderFields.keyBit($1) }

    /// Which lines of one message are hop-by-hop: the fixed names and those its `Connection`
    /// field lists.
    struct Omission {
        /// The names Connection lists that name a field present (most list `keep-alive` or
        /// `close`, naming nothing: then these stay empty and allocate nothing).
        fileprivate var named: [String] = []
        fileprivate var namedKeys: [UInt32] = []

        /// Whether `Connection` names fields present besides the fixed ones (which may be ones
        /// the proxy reads, such as `Content-Length`).
        var namesOtherFields: Bool { !named.isEmpty }

        /// Whether `field` is hop-by-hop. Keys first: they are compared without touching (and
        /// retaining) any name.
        func omits(_ line: HeaderFields.Line) -> Bool {
            // The key's bit against the fixed mask first: most lines fail it without touching the
            // key list (this runs for every line of a message that has a Connection field).
            (HeaderFields.keyBit(line.nameKey) & fixedKeyMask != 0 && fixedKeys.contains(line.nameKey)
                && fixed.contains { line.isNamed($0) })
                || (!namedKeys.isEmpty && namedKeys.contains(line.nameKey) && named.contains { line.isNamed($0) })
        }
    }

    /// The hop-by-hop lines of `fields`; nil when it has none (the usual stored response).
    static func omission(for fields: HeaderFields) -> Omission? {
        guard fields.mayContainKey(in: fixedKeyMask),
            // The mask is a 64-bit filter that most responses pass by a shared bit (a stored hit's
            // fields had ~1 100 instructions of Connection parsing below): one pass over the keys,
            // each tested by its bit before the list, settles it. Without a fixed field there is
            // no Connection field to name others.
            fields.containsNameKey(where: { HeaderFields.keyBit($0) & fixedKeyMask != 0 && fixedKeys.contains($0) })
        else { return nil }
        var omission = Omission()
        // The Connection tokens read in the value's bytes: a string is made only for a token
        // that names a field present.
        fields.forEachValueBytes(named: .connection) { value in
            FieldList.forEachTokenRange(in: value) { range in
                let token = UnsafeRawBufferPointer(rebasing: value[range])
                let key = HeaderFields.Field.nameKey(ofBytes: token)
                if fields.containsNameKey(where: { $0 == key }) {
                    omission.named.append(String(decoding: token, as: UTF8.self))
                    omission.namedKeys.append(key)
                }
                return true
            }
        }
        // A fixed key is present (checked above); whether a line really has a hop-by-hop name (keys
        // are hashes) is for the names. A closure, not `omission.omits` itself: a method passed as
        // a function allocates its context.
        guard fields.containsLine(where: { omission.omits($0) }) else { return nil }
        return omission
    }

    /// `fields` without the fixed hop-by-hop fields and without the fields `Connection` names
    /// (returned as they are when there is none: the common case costs no copy).
    static func removing(from fields: HeaderFields) -> HeaderFields {
        guard let omission = omission(for: fields) else { return fields }
        var result = fields
        result.removeLines(where: { omission.omits($0) })
        return result
    }
}
