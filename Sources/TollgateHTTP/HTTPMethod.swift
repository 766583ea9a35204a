/// An HTTP request method (RFC 9110 §9).
///
/// A struct rather than an enum so that extension methods (WebDAV, PURGE …) pass through
/// a proxy untouched; the well-known ones are static members.
public struct HTTPMethod: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The method token exactly as sent (methods are case-sensitive).
    public let rawValue: String

    /// Creates a method from its token.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Creates a method from its token.
    public init(_ rawValue: String) { self.rawValue = rawValue }

    public static let get = HTTPMethod("GET")
    public static let head = HTTPMethod("HEAD")
    public static let post = HTTPMethod("POST")
    public static let put = HTTPMethod("PUT")
    public static let delete = HTTPMethod("DELETE")
    public static let patch = HTTPMethod("PATCH")
    public static let options = HTTPMethod("OPTIONS")
    public static let connect = HTTPMethod("CONNECT")
    public static let trace = HTTPMethod("TRACE")

    /// Safe methods (RFC 9110 §9.2.1) do not change the origin's state.
    public var isSafe: Bool {
        self == .get || self == .head || self == .options || self == .trace
    }

    /// Idempotent methods (RFC 9110 §9.2.2) may be retried automatically after a connection failure.
    public var isIdempotent: Bool {
        isSafe || self == .put || self == .delete
    }

    public var description: String { rawValue }
}
