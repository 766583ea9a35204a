import TollgateHTTP

extension ConfigNode {
    /// A mapping of header field names to values (a session's `headers`, a health check's):
    /// each name a token (RFC 9110), none of `reserved` (lower case; set by `setter`), each value
    /// without a line break or NUL. A bad entry is a problem at its line and is left out.
    func headerFields(reserved: Set<String>, by setter: String) -> HeaderFields {
        var fields = HeaderFields()
        guard let entries = mapping(keys: nil) else { return fields }
        for (name, valueNode) in entries.entries {
            guard let value = valueNode.string("a header value"),
                valueNode.acceptsHeaderName(name, reserved: reserved, refusal: "is set by \(setter) and cannot be added")
            else { continue }
            guard !value.utf8.contains(where: { $0 == 0 || $0 == 10 || $0 == 13 }) else {
                valueNode.report("a header value cannot contain a line break or NUL")
                continue
            }
            fields.add(name: name, value: value)
        }
        return fields
    }

    /// Whether `name` may be used as a header field name here: a token (RFC 9110), not one of
    /// `reserved` (lower case); otherwise a problem at this node (`NAME refusal` for a reserved one).
    func acceptsHeaderName(_ name: String, reserved: Set<String>, refusal: String) -> Bool {
        guard Self.isToken(name) else {
            report("\"\(name)\" is not a valid header field name")
            return false
        }
        guard !reserved.contains(name.lowercased()) else {
            report("\(name) \(refusal)")
            return false
        }
        return true
    }

    /// Whether `name` is an RFC 9110 token (a field name).
    private static func isToken(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.allSatisfy(isTokenByte)
    }

    /// RFC 9110 `tchar`.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        (byte >= 48 && byte <= 57) || (byte >= 65 && byte <= 90) || (byte >= 97 && byte <= 122)
            || "!#$%&'*+-.^_`|~".utf8.contains(byte)
    }
}
