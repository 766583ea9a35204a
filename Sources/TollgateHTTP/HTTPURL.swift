/// An absolute `http` or `https` URL as a proxy sees it: scheme, host, port, and the
/// path with its query.
///
/// Parsing is strict on purpose: a proxy must see the same host the origin will, so
/// anything a URL parser could read two ways (userinfo, spaces, control bytes, a bad port)
/// is refused rather than guessed at. The fragment is dropped (it never goes on the wire).
///
/// The parts live in one copy-on-write box: a URL is copied into the request, the task's
/// current request, its metrics, the cache key and the policy's decisions, and each copy is
/// one retain instead of one per string.
public struct HTTPURL: Hashable, Sendable, CustomStringConvertible {
    private struct Parts: Hashable, Sendable {
        var scheme: String
        var host: String
        var port: Int?
        var pathAndQuery: String
    }

    @CopyOnWrite private var parts: Parts

    /// The scheme, lowercased (`http` or `https`).
    public var scheme: String {
        _read { yield parts.scheme }
        _modify { yield &parts.scheme }
    }
    /// The host, lowercased, without brackets for IPv6 literals.
    public var host: String {
        _read { yield parts.host }
        _modify { yield &parts.host }
    }
    /// The explicit port, if the URL named one.
    public var port: Int? {
        _read { yield parts.port }
        _modify { yield &parts.port }
    }
    /// The path and query as sent in origin-form (`/a/b?c`); never empty.
    public var pathAndQuery: String {
        _read { yield parts.pathAndQuery }
        _modify { yield &parts.pathAndQuery }
    }

    /// Why a string was not accepted as a URL.
    public struct ParseError: Error, Hashable, Sendable, CustomStringConvertible {
        /// What was wrong, for a log line or an error body.
        public let description: String
    }

    /// Creates a URL from its parts.
    public init(scheme: String, host: String, port: Int? = nil, pathAndQuery: String = "/") {
        _parts = CopyOnWrite(wrappedValue: Parts(
            scheme: scheme.lowercased(),
            host: host.lowercased(),
            port: port,
            pathAndQuery: pathAndQuery.isEmpty ? "/" : pathAndQuery
        ))
    }

    /// Parses an absolute URL; nil if it is not an acceptable absolute http(s) URL.
    public init?(string: String) {
        guard let url = try? HTTPURL.parse(string) else { return nil }
        self = url
    }

    /// Parses an absolute URL, saying what is wrong when it is not acceptable.
    public static func parse(_ string: String) throws(ParseError) -> HTTPURL {
        var ascii = true
        for byte in string.utf8 {
            if byte <= 0x20 || byte == 0x7F { throw ParseError(description: "URL contains a space or control character") }
            if byte >= 0x80 { ascii = false }
        }
        // Every request target goes through here: ASCII (nearly all of them) is parsed byte by
        // byte, with the same rules as the Character-based parse below, which handles the rest.
        if ascii { return try parseASCII(string) }
        return try parseCharacters(string)
    }

    /// ``parse(_:)`` by Characters (any string without controls or spaces).
    static func parseCharacters(_ string: String) throws(ParseError) -> HTTPURL {
        guard let colon = string.firstIndex(of: ":"), string[colon...].hasPrefix("://") else {
            throw ParseError(description: "not an absolute URL")
        }
        let scheme = string[..<colon].lowercased()
        guard !scheme.isEmpty, scheme.allSatisfy({ $0.isLetter || $0.isNumber || "+-.".contains($0) }) else {
            throw ParseError(description: "bad scheme")
        }
        var rest = string[string.index(colon, offsetBy: 3)...]
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var pathAndQuery = String(rest[authorityEnd...])
        if pathAndQuery.hasPrefix("?") { pathAndQuery = "/" + pathAndQuery }
        if pathAndQuery.isEmpty { pathAndQuery = "/" }
        let (host, port) = try parseAuthorityCharacters(authority)
        return HTTPURL(scheme: scheme, host: host, port: port, pathAndQuery: pathAndQuery)
    }

    /// ``parse(_:)`` for a string of ASCII bytes without controls or spaces, with the same rules
    /// and messages as the Character-based parse.
    private static func parseASCII(_ string: String) throws(ParseError) -> HTTPURL {
        // Over the string's own bytes (an array of them was an allocation per request target).
        var string = string
        return try string.withUTF8 { bytes in
            Result { () throws(ParseError) in try parseASCII(bytes: bytes[...]) }
        }.get()
    }

    /// The bytes of an ASCII URL (or a part of one), borrowed for a parse.
    private typealias ASCIIBytes = Slice<UnsafeBufferPointer<UInt8>>

    private static func parseASCII(bytes: ASCIIBytes) throws(ParseError) -> HTTPURL {
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon + 2 < bytes.count,
            bytes[colon + 1] == UInt8(ascii: "/"), bytes[colon + 2] == UInt8(ascii: "/")
        else {
            throw ParseError(description: "not an absolute URL")
        }
        let schemeBytes = bytes[..<colon]
        guard !schemeBytes.isEmpty, schemeBytes.allSatisfy({ isASCIIAlphanumeric($0) || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") })
        else {
            throw ParseError(description: "bad scheme")
        }
        let scheme = lowercasedString(schemeBytes)
        var end = bytes.count
        let start = colon + 3
        if let hash = bytes[start...].firstIndex(of: UInt8(ascii: "#")) { end = hash }
        let authorityEnd = bytes[start..<end].firstIndex(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") }) ?? end
        var pathAndQuery = String(decoding: bytes[authorityEnd..<end], as: UTF8.self)
        if pathAndQuery.hasPrefix("?") { pathAndQuery = "/" + pathAndQuery }
        if pathAndQuery.isEmpty { pathAndQuery = "/" }
        let (host, port) = try parseAuthorityASCII(bytes[start..<authorityEnd])
        return HTTPURL(scheme: scheme, host: host, port: port, pathAndQuery: pathAndQuery)
    }

    private static func isASCIIAlphanumeric(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
    }

    private static func lowercasedASCII(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
    }

    /// The bytes as a lowercase string; without an intermediate array when they are lowercase
    /// already (nearly every scheme and host).
    private static func lowercasedString(_ bytes: ASCIIBytes) -> String {
        if !bytes.contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) {
            return String(decoding: bytes, as: UTF8.self)
        }
        return String(decoding: bytes.map(lowercasedASCII), as: UTF8.self)
    }

    /// The bytes a host name may have besides letters and digits.
    private static let hostPunctuation: Set<UInt8> = Set("-._~%!$&'()*+,;=".utf8)

    /// ``parseAuthority(_:)`` over ASCII bytes, with the same rules and messages.
    private static func parseAuthorityASCII(_ authority: ASCIIBytes) throws(ParseError) -> (host: String, port: Int?) {
        if authority.contains(UInt8(ascii: "@")) {
            throw ParseError(description: "URL with userinfo is refused")
        }
        var host: ASCIIBytes
        var portText: ASCIIBytes?
        let bracketed = authority.first == UInt8(ascii: "[")
        if bracketed {
            guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else {
                throw ParseError(description: "unterminated IPv6 literal")
            }
            host = authority[(authority.startIndex + 1)..<close]
            let after = authority[(close + 1)...]
            if !after.isEmpty {
                guard after.first == UInt8(ascii: ":") else { throw ParseError(description: "junk after IPv6 literal") }
                portText = after.dropFirst()
            }
            let isHex: (UInt8) -> Bool = {
                ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "f"))
                    || ($0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "F"))
            }
            guard !host.isEmpty, host.allSatisfy({ isHex($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") }) else {
                throw ParseError(description: "bad IPv6 literal")
            }
        } else if let colon = authority.lastIndex(of: UInt8(ascii: ":")) {
            host = authority[..<colon]
            portText = authority[(colon + 1)...]
        } else {
            host = authority
        }
        guard !host.isEmpty else { throw ParseError(description: "URL has no host") }
        if !bracketed {
            guard host.allSatisfy({ isASCIIAlphanumeric($0) || hostPunctuation.contains($0) }) else {
                throw ParseError(description: "host contains characters a URL host may not")
            }
        }
        var port: Int?
        if let portText, !portText.isEmpty {
            guard portText.count <= 5, portText.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
                throw ParseError(description: "bad port")
            }
            let value = portText.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
            guard (1...65535).contains(value) else { throw ParseError(description: "bad port") }
            port = value
        }
        return (lowercasedString(host), port)
    }

    /// Splits `host[:port]` (IPv6 in brackets), refusing userinfo and empty hosts.
    public static func parseAuthority(_ authority: Substring) throws(ParseError) -> (host: String, port: Int?) {
        if authority.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) {
            var text = authority  // its own bytes (withUTF8 is mutating), not a copy as a String
            return try text.withUTF8 { bytes in
                Result { () throws(ParseError) in try parseAuthorityASCII(bytes[...]) }
            }.get()
        }
        return try parseAuthorityCharacters(authority)
    }

    /// ``parseAuthority(_:)`` by Characters.
    static func parseAuthorityCharacters(_ authority: Substring) throws(ParseError) -> (host: String, port: Int?) {
        if authority.contains("@") {
            throw ParseError(description: "URL with userinfo is refused")
        }
        var host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else {
                throw ParseError(description: "unterminated IPv6 literal")
            }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw ParseError(description: "junk after IPv6 literal") }
                portText = after.dropFirst()
            }
            guard !host.isEmpty, host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else {
                throw ParseError(description: "bad IPv6 literal")
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        } else {
            host = authority
        }
        guard !host.isEmpty else { throw ParseError(description: "URL has no host") }
        if !authority.hasPrefix("[") {
            let allowed = host.unicodeScalars.allSatisfy { scalar in
                scalar.isASCII
                    && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "-._~%!$&'()*+,;=".unicodeScalars.contains(scalar))
            }
            guard allowed else { throw ParseError(description: "host contains characters a URL host may not") }
        }
        var port: Int?
        if let portText {
            if portText.isEmpty {
                port = nil
            } else {
                guard portText.count <= 5, portText.allSatisfy(\.isASCIIDigit), let value = Int(portText),
                    (1...65535).contains(value)
                else { throw ParseError(description: "bad port") }
                port = value
            }
        }
        return (host.lowercased(), port)
    }

    /// The port the connection goes to: the explicit one, else 443 for https and 80 otherwise.
    public var effectivePort: Int { port ?? defaultPort }

    /// The scheme's port: 443 for https, 80 for http.
    private var defaultPort: Int { scheme == "https" ? 443 : 80 }

    /// The port as the URL is written (the one `authority` shows): nil when absent or the
    /// scheme's default.
    public var shownPort: Int? { port.flatMap { $0 != defaultPort ? $0 : nil } }

    /// Whether the host is an IPv6 literal (written in brackets).
    private var hostNeedsBrackets: Bool { host.containsUTF8(UInt8(ascii: ":")) }

    /// Whether the scheme is `https`.
    public var isSecure: Bool { scheme == "https" }

    /// The host as it appears in a URL (IPv6 literals in brackets).
    public var hostForURL: String { hostNeedsBrackets ? "[\(host)]" : host }

    /// `host[:port]`, the port only when it is not the scheme's default (the Host header's value).
    public var authority: String {
        guard let port = shownPort else { return hostForURL }
        // Appended, not interpolated: an interpolation allocates a buffer even for a result that
        // fits in a small string (`127.0.0.1:8080`), and the cache key asks for this per request.
        var text = hostForURL
        text.append(":")
        text.append(String(port))
        return text
    }

    /// `scheme://authority`, the URL's origin (RFC 6454) in serialized form.
    public var origin: String { "\(scheme)://\(authority)" }

    /// The path without the query.
    public var path: String {
        // Over the UTF-8 (an ASCII byte is a character boundary): no grapheme breaking.
        if let q = pathAndQuery.firstUTF8Offset(of: UInt8(ascii: "?")) {
            return String(pathAndQuery[..<pathAndQuery.utf8Index(at: q)])
        }
        return pathAndQuery
    }

    /// The query without its `?`, or nil.
    public var query: String? {
        guard let q = pathAndQuery.firstUTF8Offset(of: UInt8(ascii: "?")) else { return nil }
        return String(pathAndQuery[pathAndQuery.utf8Index(at: q + 1)...])
    }

    /// The whole URL.
    public var absoluteString: String { absoluteString(pathAndQuery: pathAndQuery) }

    /// `scheme://authority` followed by `pathAndQuery` (a normalized form of this URL's, say),
    /// built in one allocation: the cache makes one per request for its key, and the pieces
    /// and interpolations it was built from cost more than the key's lookup.
    public func absoluteString(pathAndQuery: String) -> String {
        let host = parts.host
        let bracketed = hostNeedsBrackets
        let shownPort = shownPort
        let capacity = scheme.utf8.count + 3 + host.utf8.count + (bracketed ? 2 : 0) + (shownPort == nil ? 0 : 21)
            + pathAndQuery.utf8.count
        return String(unsafeUninitializedCapacity: capacity) { buffer in
            var count = 0
            func put(_ byte: UInt8) {
                buffer[count] = byte
                count += 1
            }
            func put(_ text: String) {
                let copied: Void? = text.utf8.withContiguousStorageIfAvailable { bytes in
                    guard let base = bytes.baseAddress else { return }
                    (buffer.baseAddress! + count).update(from: base, count: bytes.count)
                    count += bytes.count
                }
                if copied == nil { for byte in text.utf8 { put(byte) } }
            }
            put(scheme)
            put(UInt8(ascii: ":"))
            put(UInt8(ascii: "/"))
            put(UInt8(ascii: "/"))
            if bracketed { put(UInt8(ascii: "[")) }
            put(host)
            if bracketed { put(UInt8(ascii: "]")) }
            if let shownPort {
                put(UInt8(ascii: ":"))
                // Written from the last digit back (a port is 0…65535, but any Int comes out right).
                if shownPort < 0 { put(UInt8(ascii: "-")) }
                var value = shownPort.magnitude
                var length = 1
                var probe = value
                while probe >= 10 {
                    probe /= 10
                    length += 1
                }
                count += length
                var index = count
                repeat {
                    index -= 1
                    buffer[index] = UInt8(ascii: "0") + UInt8(value % 10)
                    value /= 10
                } while value > 0
            }
            put(pathAndQuery)
            return count
        }
    }

    public var description: String { absoluteString }

    /// Whether two URLs share scheme, host and port.
    public func isSameOrigin(as other: HTTPURL) -> Bool {
        scheme == other.scheme && host == other.host && effectivePort == other.effectivePort
    }

    /// Resolves a URI reference (as found in Location) against this URL, RFC 3986 §5.2.
    public func resolving(_ reference: String) throws(ParseError) -> HTTPURL {
        let trimmed = reference.trimmingASCIIWhitespace()
        if let colon = trimmed.firstIndex(of: ":"),
            let slash = trimmed.firstIndex(of: "/"), colon < slash, trimmed[..<colon].allSatisfy(\.isLetter)
        {
            return try HTTPURL.parse(trimmed)
        }
        for byte in trimmed.utf8 where byte <= 0x20 || byte == 0x7F {
            throw ParseError(description: "reference contains a space or control character")
        }
        var ref = Substring(trimmed)
        if let hash = ref.firstIndex(of: "#") { ref = ref[..<hash] }
        if ref.hasPrefix("//") {
            return try HTTPURL.parse("\(scheme):\(ref)")
        }
        if ref.isEmpty { return self }
        if ref.hasPrefix("?") {
            return HTTPURL(scheme: scheme, host: host, port: port, pathAndQuery: path + ref)
        }
        let (refPath, refQuery): (Substring, Substring?) = {
            if let q = ref.firstIndex(of: "?") { return (ref[..<q], ref[q...]) }
            return (ref, nil)
        }()
        let merged: String
        if refPath.hasPrefix("/") {
            merged = String(refPath)
        } else {
            let base = path
            let directory = base[...(base.lastIndex(of: "/") ?? base.startIndex)]
            merged = String(directory) + refPath
        }
        let normalized = HTTPURL.removeDotSegments(merged)
        return HTTPURL(scheme: scheme, host: host, port: port, pathAndQuery: normalized + (refQuery ?? ""))
    }

    /// RFC 3986 §5.2.4.
    static func removeDotSegments(_ path: String) -> String {
        var output: [Substring] = []
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        for (index, segment) in segments.enumerated() {
            let isLast = index == segments.count - 1
            switch segment {
            case ".":
                if isLast { output.append("") }
            case "..":
                if output.count > 1 { output.removeLast() }
                if isLast { output.append("") }
            default:
                output.append(segment)
            }
        }
        let joined = output.joined(separator: "/")
        return joined.hasPrefix("/") ? joined : "/" + joined
    }
}

extension Character {
    /// `0`…`9` only (Character.isNumber accepts other scripts' digits too).
    var isASCIIDigit: Bool { asciiValue.map { $0 >= 48 && $0 <= 57 } ?? false }
}

extension String {
    /// The string without leading and trailing spaces and tabs (OWS, RFC 9110 §5.6.3).
    public func trimmingASCIIWhitespace() -> String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return String(s)
    }
}
