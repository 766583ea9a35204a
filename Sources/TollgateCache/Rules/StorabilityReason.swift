/// Why a response was not stored, or what was changed to store it: a stable token for the
/// `detail` parameter of Cache-Status (RFC 9211 §2.8), logs and metrics labels.
public struct StorabilityReason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The token, e.g. `no-store`.
    public let rawValue: String

    /// A reason from its token.
    public init(rawValue: String) { self.rawValue = rawValue }

    public var description: String { rawValue }

    /// Not an `http` or `https` URL.
    public static let scheme = StorabilityReason(rawValue: "scheme")
    /// The request method's responses are not stored (only GET's are).
    public static let method = StorabilityReason(rawValue: "method")
    /// A 206 Partial Content response: never stored as the whole resource.
    public static let partial = StorabilityReason(rawValue: "partial")
    /// A status the cache may not store: 1xx, 304, a status that is neither heuristically
    /// cacheable nor given explicit freshness, or a `must-understand` status not understood.
    public static let status = StorabilityReason(rawValue: "status")
    /// The response came from the cache, not the network.
    public static let notFromNetwork = StorabilityReason(rawValue: "not-from-network")
    /// The request's or the session's cache policy forbids storing.
    public static let policy = StorabilityReason(rawValue: "policy")
    /// `no-store` in the request or the response.
    public static let noStore = StorabilityReason(rawValue: "no-store")
    /// `private` (unqualified) in a shared cache.
    public static let `private` = StorabilityReason(rawValue: "private")
    /// The request had Authorization (or a `Client-Cert`, RFC 9440) and the response did not
    /// allow a shared cache to store it (`public`, `s-maxage` or `must-revalidate`, RFC 9111 §3.5).
    public static let authorization = StorabilityReason(rawValue: "authorization")
    /// `Vary: *`: no later request could ever be matched to it.
    public static let varyStar = StorabilityReason(rawValue: "vary-star")
    /// The body is larger than the cache's per-response limit (5 % of capacity).
    public static let sizeLimit = StorabilityReason(rawValue: "size-limit")

    /// Stored, with Set-Cookie removed from the stored copy.
    public static let setCookieStripped = StorabilityReason(rawValue: "set-cookie-stripped")
    /// Stored, with the fields a `private="…"` directive lists removed (shared cache).
    public static let privateFieldsStripped = StorabilityReason(rawValue: "private-fields-stripped")
}
