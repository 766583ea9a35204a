/// One challenge of a `WWW-Authenticate` field (RFC 9110 §11.6.1): a scheme and either
/// auth-params or a token68.
public struct ParsedChallenge: Hashable, Sendable {
    /// The scheme as sent (compare with ``schemeName``, lowercased).
    public var scheme: String
    /// The auth-params, names lowercased, quoted-string values unquoted.
    public var parameters: [String: String]
    /// The token68, for schemes that carry one (Negotiate, NTLM).
    public var token68: String?

    /// The scheme, lowercased.
    public var schemeName: String { scheme.lowercased() }
    /// The `realm` parameter.
    public var realm: String? { parameters["realm"] }

    /// Creates a challenge.
    public init(scheme: String, parameters: [String: String] = [:], token68: String? = nil) {
        self.scheme = scheme
        self.parameters = parameters
        self.token68 = token68
    }
}

/// Parses `WWW-Authenticate` (and `Proxy-Authenticate`) field values, which may each hold
/// several challenges separated by commas: `Digest realm="a", nonce="b", Basic realm="a"`.
public enum AuthenticationHeader {
    /// Every challenge in `values`, in order. Malformed pieces are skipped.
    public static func challenges(in values: [String]) -> [ParsedChallenge] {
        var result: [ParsedChallenge] = []
        for value in values {
            for item in splitTopLevel(value) {
                var rest = Substring(item)
                if let param = parameter(rest) {
                    // `name=value` continues the current challenge.
                    if !result.isEmpty, result[result.count - 1].token68 == nil,
                        result[result.count - 1].parameters[param.name] == nil
                    {
                        result[result.count - 1].parameters[param.name] = param.value
                    }
                    continue
                }
                let scheme = rest.prefix { isTokenCharacter($0) }
                guard !scheme.isEmpty else { continue }
                rest = rest.dropFirst(scheme.count)
                guard rest.isEmpty || rest.first == " " || rest.first == "\t" else { continue }
                rest = rest.drop { $0 == " " || $0 == "\t" }
                var challenge = ParsedChallenge(scheme: String(scheme))
                if !rest.isEmpty {
                    if let param = parameter(rest) {
                        challenge.parameters[param.name] = param.value
                    } else if isToken68(rest) {
                        challenge.token68 = String(rest)
                    } else {
                        continue
                    }
                }
                result.append(challenge)
            }
        }
        return result
    }

    /// Quotes `value` as an HTTP quoted-string.
    public static func quoted(_ value: String) -> String {
        var out = "\""
        for character in value {
            if character == "\"" || character == "\\" { out.append("\\") }
            out.append(character)
        }
        return out + "\""
    }

    /// Splits on commas outside quoted strings, trimming whitespace; empty items are dropped.
    static func splitTopLevel(_ value: String) -> [String] {
        var items: [String] = []
        var current = ""
        var inQuotes = false
        var escaped = false
        for character in value {
            if inQuotes {
                current.append(character)
                if escaped {
                    escaped = false
                } else if character == "\\" {
                    escaped = true
                } else if character == "\"" {
                    inQuotes = false
                }
                continue
            }
            if character == "," {
                items.append(current)
                current = ""
                continue
            }
            if character == "\"" { inQuotes = true }
            current.append(character)
        }
        items.append(current)
        return items.map { $0.trimming(" \t") }.filter { !$0.isEmpty }
    }

    /// `token BWS "=" BWS (token / quoted-string)` filling all of `text`, or nil.
    static func parameter(_ text: Substring) -> (name: String, value: String)? {
        let name = text.prefix { isTokenCharacter($0) }
        guard !name.isEmpty else { return nil }
        var rest = text.dropFirst(name.count).drop { $0 == " " || $0 == "\t" }
        guard rest.first == "=" else { return nil }
        rest = rest.dropFirst().drop { $0 == " " || $0 == "\t" }
        guard let first = rest.first, first != "=" else { return nil }  // `abc==` is a token68
        if first == "\"" {
            var value = ""
            var escaped = false
            var closed = false
            for character in rest.dropFirst() {
                if closed { return nil }  // something after the closing quote
                if escaped {
                    value.append(character)
                    escaped = false
                } else if character == "\\" {
                    escaped = true
                } else if character == "\"" {
                    closed = true
                } else {
                    value.append(character)
                }
            }
            return closed ? (name.lowercased(), value) : nil
        }
        let token = rest.prefix { isTokenCharacter($0) }
        guard token.count == rest.count else { return nil }
        return (name.lowercased(), String(token))
    }

    static func isTokenCharacter(_ character: Character) -> Bool {
        guard let ascii = character.asciiValue, ascii > 32, ascii < 127 else { return false }
        return !"\"(),/:;<=>?@[\\]{}".contains(character)
    }

    static func isToken68(_ text: Substring) -> Bool {
        let body = text.reversed().drop { $0 == "=" }
        return !body.isEmpty
            && body.allSatisfy { character in
                guard let ascii = character.asciiValue else { return false }
                return (ascii >= 48 && ascii <= 57) || (ascii >= 65 && ascii <= 90) || (ascii >= 97 && ascii <= 122)
                    || "-._~+/".contains(character)
            }
    }
}

extension String {
    func trimming(_ set: String) -> String {
        var slice = Substring(self)
        while let first = slice.first, set.contains(first) { slice = slice.dropFirst() }
        while let last = slice.last, set.contains(last) { slice = slice.dropLast() }
        return String(slice)
    }
}
