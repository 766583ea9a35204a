public import Foundation
public import TollgateHTTP

/// Why a Set-Cookie field was not stored.
public enum CookieRefusal: String, Error, Hashable, Sendable, CustomStringConvertible {
    /// Not a cookie: no `=`, an empty name, or control characters (RFC 6265 §5.2).
    case malformed
    /// Name and value longer than 4096 bytes.
    case tooLarge
    /// `Domain` names a public suffix other than the host itself (§5.3 step 5).
    case publicSuffix = "public-suffix"
    /// `Domain` does not domain-match the host that sent it (§5.3 step 6).
    case domainMismatch = "domain-mismatch"
    /// `Secure` (or a `__Secure-`/`__Host-` name) over plain http (RFC 6265bis).
    case insecureOrigin = "insecure-origin"
    /// A `__Host-` cookie with a `Domain` or a path other than `/` (RFC 6265bis).
    case hostPrefix = "host-prefix"
    /// The accept policy refused it.
    case policy

    public var description: String { rawValue }
}

extension Cookie {
    /// The longest name plus value kept (RFC 6265 §6.1's minimum; browsers' limit).
    public static let maximumSize = 4096

    /// The cookie one Set-Cookie field value received from `url` makes (RFC 6265 §5.2 parsing,
    /// §5.3 storage rules), or why it is refused. An `Expires` date or `Max-Age` in the past gives
    /// an already-expired cookie: storing it deletes the one it names.
    public static func parse(
        setCookie field: String,
        from url: HTTPURL,
        now: Date = Date(),
        publicSuffixes: PublicSuffixList = .system
    ) -> Result<Cookie, CookieRefusal> {
        // Split at the bytes `;` and `=`, as every other cookie parser does, not at Characters: a
        // `;` followed by a combining mark is one Character, and was kept inside the value (found
        // by FuzzCookie).
        let pieces = field.utf8.split(separator: UInt8(ascii: ";"), omittingEmptySubsequences: false)
            .map { Substring($0) }
        guard let pair = pieces.first, let equals = pair.utf8.firstIndex(of: UInt8(ascii: "=")) else {
            return .failure(.malformed)
        }
        let name = String(pair[..<equals]).trimming(" \t")
        let value = String(pair[pair.utf8.index(after: equals)...]).trimming(" \t")
        guard !name.isEmpty, !containsControl(name), !containsControl(value) else { return .failure(.malformed) }
        guard name.utf8.count + value.utf8.count <= maximumSize else { return .failure(.tooLarge) }

        var expires: Date?
        var maxAge: Date?
        var domainAttribute: String?
        var pathAttribute: String?
        var secure = false
        var httpOnly = false
        var sameSite: SameSite?
        for piece in pieces.dropFirst() {
            let attribute: String
            let attributeValue: String
            if let eq = piece.utf8.firstIndex(of: UInt8(ascii: "=")) {
                attribute = String(piece[..<eq]).trimming(" \t").lowercased()
                attributeValue = String(piece[piece.utf8.index(after: eq)...]).trimming(" \t")
            } else {
                attribute = String(piece).trimming(" \t").lowercased()
                attributeValue = ""
            }
            switch attribute {
            case "expires":
                if let date = CookieDate.parse(attributeValue) { expires = date }
            case "max-age":
                if let seconds = deltaSeconds(attributeValue) {
                    maxAge =
                        seconds <= 0
                        ? Date.distantPast : now.addingTimeInterval(TimeInterval(min(seconds, 100 * 365 * 86_400)))
                }
            case "domain":
                guard !attributeValue.isEmpty else { continue }
                var domain = attributeValue.lowercased()
                if domain.hasPrefix(".") { domain.removeFirst() }
                if domain.hasSuffix("."), domain.count > 1 { domain.removeLast() }
                domainAttribute = domain
            case "path":
                pathAttribute = attributeValue.hasPrefix("/") ? attributeValue : nil
            case "secure":
                secure = true
            case "httponly":
                httpOnly = true
            case "samesite":
                sameSite = [SameSite.strict, .lax, .none].first {
                    $0.rawValue.lowercased() == attributeValue.lowercased()
                }
            default:
                continue
            }
        }

        let host = url.host.lowercased()
        var domain = host
        var hostOnly = true
        if let domainAttribute {
            if isIPAddress(host) {
                guard domainAttribute == host else { return .failure(.domainMismatch) }
            } else if publicSuffixes.isPublicSuffix(domainAttribute) {
                guard domainAttribute == host else { return .failure(.publicSuffix) }  // else host-only
            } else {
                guard domainMatches(host, domainAttribute) else { return .failure(.domainMismatch) }
                domain = domainAttribute
                hostOnly = false
            }
        }
        let path = pathAttribute ?? defaultPath(of: url.path)
        let secureOrigin = url.isSecure
        if secure || name.hasPrefix("__Secure-") || name.hasPrefix("__Host-") {
            guard secureOrigin, secure else { return .failure(.insecureOrigin) }
        }
        if name.hasPrefix("__Host-"), domainAttribute != nil || path != "/" { return .failure(.hostPrefix) }
        return .success(
            Cookie(
                name: name,
                value: value,
                domain: domain,
                path: path,
                expiresDate: maxAge ?? expires,
                isHostOnly: hostOnly,
                isSecure: secure,
                isHTTPOnly: httpOnly,
                sameSite: sameSite,
                creationDate: now
            )
        )
    }

    /// Whether a request to `url` carries this cookie (§5.4 step 1): the host (exactly for a
    /// host-only cookie, else domain-matching), the path (path-matching), https for a secure one.
    public func matches(_ url: HTTPURL) -> Bool {
        let host = url.host.lowercased()
        let domainOK = isHostOnly ? host == domain : Self.domainMatches(host, domain)
        return domainOK && Self.pathMatches(url.path.isEmpty ? "/" : url.path, path) && (!isSecure || url.isSecure)
    }

    /// RFC 6265 §5.1.3.
    public static func domainMatches(_ host: String, _ domain: String) -> Bool {
        if host == domain { return true }
        return !isIPAddress(host) && host.hasSuffix("." + domain)
    }

    /// RFC 6265 §5.1.4.
    public static func pathMatches(_ requestPath: String, _ cookiePath: String) -> Bool {
        if requestPath == cookiePath { return true }
        guard requestPath.hasPrefix(cookiePath) else { return false }
        return cookiePath.hasSuffix("/") || requestPath.dropFirst(cookiePath.count).first == "/"
    }

    /// RFC 6265 §5.1.4's default-path: the URL's path up to, not including, its last `/`.
    public static func defaultPath(of path: String) -> String {
        guard path.hasPrefix("/"), let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return "/" }
        return String(path[..<slash])
    }

    static func isIPAddress(_ host: String) -> Bool {
        if host.contains(":") { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { UInt8($0) != nil }
    }

    private static func containsControl(_ text: String) -> Bool {
        text.utf8.contains { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }
    }

    /// Max-Age: `-`? DIGIT+; anything else ignores the attribute.
    private static func deltaSeconds(_ text: String) -> Int? {
        var digits = Substring(text)
        let negative = digits.first == "-"
        if negative { digits = digits.dropFirst() }
        guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        let value = Int(digits) ?? Int.max  // too many digits: as good as forever
        return negative ? -value : value
    }
}
