public import Foundation

/// A cookie as a cookie store keeps it (RFC 6265 §5.3), in the model of `HTTPCookie`.
public struct Cookie: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The `SameSite` attribute (RFC 6265bis), kept as sent: a proxy has no site context, so it
    /// does not change which requests carry the cookie.
    public enum SameSite: String, Hashable, Sendable, Codable {
        case strict = "Strict"
        case lax = "Lax"
        case none = "None"
    }

    /// The name.
    public var name: String
    /// The value (a secret: ``description`` does not show it).
    public var value: String
    /// The domain, lowercased, without a leading dot.
    public var domain: String
    /// The path (starts with `/`).
    public var path: String
    /// When it expires; nil for a session cookie (kept in memory only, until the process ends).
    public var expiresDate: Date?
    /// Sent only to the exact host that set it (it had no `Domain` attribute).
    public var isHostOnly: Bool
    /// Sent only over https.
    public var isSecure: Bool
    /// Not for scripts (kept; a proxy sends it like any other).
    public var isHTTPOnly: Bool
    /// `SameSite`, if sent.
    public var sameSite: SameSite?
    /// When it was first stored (an update keeps it); orders the Cookie header.
    public var creationDate: Date
    /// When it was last sent or stored.
    public var lastAccessDate: Date
    /// The order in which its store first stored it: breaks ties between equal creation dates
    /// (several Set-Cookie fields of one response), so the Cookie header's order is stable.
    var storeOrder: UInt64 = 0

    /// Whether it lives only as long as the process (no `Expires` or `Max-Age`).
    public var isSessionOnly: Bool { expiresDate == nil }

    /// Creates a cookie.
    public init(
        name: String,
        value: String,
        domain: String,
        path: String = "/",
        expiresDate: Date? = nil,
        isHostOnly: Bool = true,
        isSecure: Bool = false,
        isHTTPOnly: Bool = false,
        sameSite: SameSite? = nil,
        creationDate: Date = Date(),
        lastAccessDate: Date? = nil
    ) {
        self.name = name
        self.value = value
        self.domain = domain
        self.path = path
        self.expiresDate = expiresDate
        self.isHostOnly = isHostOnly
        self.isSecure = isSecure
        self.isHTTPOnly = isHTTPOnly
        self.sameSite = sameSite
        self.creationDate = creationDate
        self.lastAccessDate = lastAccessDate ?? creationDate
    }

    /// Whether it has expired at `now`.
    public func isExpired(at now: Date) -> Bool {
        expiresDate.map { $0 <= now } ?? false
    }

    /// What identifies a cookie in a store: a new cookie with the same name, domain and path
    /// replaces the old one (RFC 6265 §5.3 step 11).
    public var identity: String { "\(domain)\u{0}\(path)\u{0}\(name)" }

    /// `name=****; domain=…; path=…` and its flags — never the value.
    public var description: String {
        var parts = ["\(name)=****", "domain=\(isHostOnly ? "" : ".")\(domain)", "path=\(path)"]
        if let expiresDate {
            parts.append("expires=\(HTTPDateText.format(expiresDate))")
        } else {
            parts.append("session")
        }
        if isSecure { parts.append("secure") }
        if isHTTPOnly { parts.append("httponly") }
        if let sameSite { parts.append("samesite=\(sameSite.rawValue)") }
        return parts.joined(separator: "; ")
    }
}

/// IMF-fixdate text for listings.
enum HTTPDateText {
    static func format(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}
