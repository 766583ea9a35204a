/// A host pattern of a host rule or destination rule: an exact host, or a wildcard in the leftmost
/// label, with an optional `:port`.
///
/// | pattern | matches |
/// |---|---|
/// | `example.com` | `example.com` only |
/// | `*.example.com` | exactly one more label: `a.example.com`, not `example.com`, not `a.b.example.com` |
/// | `**.example.com` | zero or more labels: `example.com`, `a.example.com`, `a.b.example.com` |
/// | `*` | any single-label host (`localhost`, `intranet`) |
/// | `**` | every host, IP literals included |
/// | `10.1.2.3`, `[::1]`, `::1` | that address (compared as bytes, so `[0:0::1]` is `::1`) |
/// | `example.com:8443`, `[::1]:8080` | the same, on that port only (the URL's port, or 80/443 by scheme) |
///
/// Matching is case-insensitive and ignores one trailing dot (`Example.COM.` is `example.com`).
/// The wildcards never match IP literals, except `**`. The model is OkHttp's `CertificatePinner`
/// patterns; unlike OkHttp, rules are first-match, so patterns are never combined.
public struct HostPattern: Hashable, Sendable, CustomStringConvertible {
    private enum Form: Hashable, Sendable {
        case exact(String)
        case address([UInt8])
        case oneLabel(suffix: String)  // "" for `*`
        case anyDepth(suffix: String)  // "" for `**`
    }

    private let form: Form
    /// The port the pattern is limited to, or nil for any port.
    public let port: Int?
    /// The pattern in canonical form (lowercase, no trailing dot).
    public let description: String

    /// Why a text is not a host pattern; the message quotes it and says what is wrong.
    public struct ParseError: Error, Hashable, Sendable, CustomStringConvertible {
        /// What is wrong, in one line.
        public let description: String
    }

    /// Parses a pattern (see the type's table).
    public init(_ text: String) throws(ParseError) {
        func fail(_ why: String) -> ParseError { ParseError(description: "\"\(text)\": \(why)") }
        guard !text.isEmpty else { throw ParseError(description: "empty host pattern") }
        guard text.unicodeScalars.allSatisfy({ $0.isASCII }) else {
            throw fail("write internationalized names in their xn-- (punycode) form")
        }
        guard !text.contains(where: { $0 == " " || $0 == "\t" || $0 == "/" || $0 == "@" }) else {
            throw fail("a host pattern is a host name with an optional :port, not a URL")
        }
        let lower = text.lowercased()
        var hostText: Substring
        var portText: Substring?
        let colons = lower.filter { $0 == ":" }.count
        if lower.hasPrefix("[") {
            guard let close = lower.firstIndex(of: "]") else { throw fail("unterminated [") }
            hostText = lower[lower.index(after: lower.startIndex)..<close]
            let after = lower[lower.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw fail("expected :PORT after ]") }
                portText = after.dropFirst()
            }
            guard CIDR.addressBytes(String(hostText))?.count == 16 else { throw fail("not an IPv6 address in [ ]") }
        } else if colons >= 2 {
            hostText = Substring(lower)
        } else if colons == 1, let colon = lower.firstIndex(of: ":") {
            hostText = lower[..<colon]
            portText = lower[lower.index(after: colon)...]
        } else {
            hostText = Substring(lower)
        }
        if let portText {
            guard !portText.isEmpty, portText.count <= 5, portText.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
                let value = Int(portText), (1...65535).contains(value)
            else { throw fail("the port must be a number from 1 to 65535") }
            self.port = value
        } else {
            self.port = nil
        }
        if hostText.count > 1, hostText.hasSuffix(".") { hostText = hostText.dropLast() }

        let form: Form
        if hostText == "**" {
            form = .anyDepth(suffix: "")
        } else if hostText == "*" {
            form = .oneLabel(suffix: "")
        } else if hostText.hasPrefix("**.") {
            form = .anyDepth(suffix: try HostPattern.checkedName(hostText.dropFirst(3), fail))
        } else if hostText.hasPrefix("*.") {
            form = .oneLabel(suffix: try HostPattern.checkedName(hostText.dropFirst(2), fail))
        } else if let bytes = CIDR.addressBytes(String(hostText)) {
            form = .address(bytes)
        } else {
            form = .exact(try HostPattern.checkedName(hostText, fail))
        }
        self.form = form

        var canonical: String
        switch form {
        case .address(let bytes):
            let address = CIDR.addressText(bytes) ?? String(hostText)
            canonical = bytes.count == 16 && port != nil ? "[\(address)]" : address
        default:
            canonical = String(hostText)
        }
        if let port { canonical += ":\(port)" }
        self.description = canonical
    }

    /// The one host the pattern names, without its port (`api.internal`, `10.0.0.1`, `::1`);
    /// nil for a wildcard.
    public var singleHost: String? {
        switch form {
        case .exact(let name): return name
        case .address(let bytes): return CIDR.addressText(bytes)
        case .oneLabel, .anyDepth: return nil
        }
    }

    /// A host prepared for matching against many patterns: normalized and tried as an address
    /// once, not once per pattern (a request is checked against every host rule and destination
    /// rule before the first that matches).
    public struct Candidate: Sendable {
        /// ``HostPattern/normalizedHost(_:)`` of the host.
        public let name: String
        /// Its address bytes when it is an IP literal.
        public let address: [UInt8]?

        /// `host` in any case, with a trailing dot, an IPv6 literal with or without brackets.
        public init(host: String) {
            name = HostPattern.normalizedHost(host)
            address = CIDR.addressBytes(name)
        }
    }

    /// Whether a request to `host` on `port` matches. `host` may be in any case, with a trailing
    /// dot, and an IPv6 literal with or without brackets.
    public func matches(host: String, port: Int) -> Bool {
        matches(Candidate(host: host), port: port)
    }

    /// Whether a request to the prepared host on `port` matches.
    public func matches(_ candidate: Candidate, port: Int) -> Bool {
        if let ownPort = self.port, ownPort != port { return false }
        if case .address(let bytes) = form { return candidate.address == bytes }
        if case .anyDepth(suffix: "") = form { return true }
        if candidate.address != nil { return false }
        let name = candidate.name.utf8
        let dot = UInt8(ascii: ".")
        switch form {
        case .exact(let exact):
            return candidate.name == exact
        case .oneLabel(let suffix) where suffix.isEmpty:
            return !name.isEmpty && !name.contains(dot)
        case .oneLabel(let suffix):
            // Compared as bytes: names are ASCII, and String's suffix test works by Character.
            guard Self.endsWithLabels(name, suffix.utf8) else { return false }
            let label = name.dropLast(suffix.utf8.count + 1)
            return !label.isEmpty && !label.contains(dot)
        case .anyDepth(let suffix):
            return candidate.name == suffix || Self.endsWithLabels(name, suffix.utf8)
        case .address:
            return false
        }
    }

    /// Whether `name` ends with `.` and then `suffix`.
    private static func endsWithLabels(_ name: String.UTF8View, _ suffix: String.UTF8View) -> Bool {
        guard name.count > suffix.count else { return false }
        let start = name.index(name.endIndex, offsetBy: -suffix.count)
        return name[name.index(before: start)] == UInt8(ascii: ".") && name[start...].elementsEqual(suffix)
    }

    /// A host as patterns compare it: lowercase, without IPv6 brackets or one trailing dot.
    public static func normalizedHost(_ host: String) -> String {
        var name = Substring(host.lowercased())
        if name.hasPrefix("["), name.hasSuffix("]") { name = name.dropFirst().dropLast() }
        if name.count > 1, name.hasSuffix(".") { name = name.dropLast() }
        return String(name)
    }

    private static func checkedName(
        _ name: Substring,
        _ fail: (String) -> ParseError
    ) throws(ParseError) -> String {
        if name.contains("*") {
            throw fail("a wildcard must be the whole leftmost label: *.example.com or **.example.com")
        }
        guard name.count <= 253 else { throw fail("a host name is at most 253 characters") }
        for label in name.split(separator: ".", omittingEmptySubsequences: false) {
            guard !label.isEmpty else { throw fail("empty label (two dots in a row, or a leading dot)") }
            guard label.count <= 63 else { throw fail("a label is at most 63 characters") }
            guard label.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
                throw fail("a host name has only letters, digits, - and _ between its dots")
            }
        }
        return String(name)
    }
}
