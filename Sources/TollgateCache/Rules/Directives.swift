import Foundation
public import TollgateHTTP

extension CacheControl {
    /// The request's Cache-Control, with `Pragma: no-cache` read as `no-cache` when the
    /// request has no Cache-Control field (RFC 9111 §5.4).
    public init(request fields: HeaderFields) {
        self.init(messageFields: fields)
    }

    /// The response's Cache-Control. A response with `Pragma: no-cache` and no Cache-Control
    /// field is read as `no-cache` (store, always revalidate): RFC 9111 leaves Pragma in
    /// responses unspecified, HTTP/1.0 origins use it to forbid reuse, and the seeds'
    /// `willCacheResponse` gate consults Pragma too; revalidating is the safe reading.
    public init(response fields: HeaderFields) {
        self.init(messageFields: fields)
    }

    /// Both readings: the Cache-Control lines, or `no-cache` for `Pragma: no-cache` without them.
    private init(messageFields fields: HeaderFields) {
        // Most requests carry neither field: then no parse and no arrays (usually no walk either).
        guard fields.containsAny(of: Self.directiveFields) else {
            self.init()
            return
        }
        self.init(cacheControlLinesOf: fields)
        if !fields.contains(.cacheControl), Pragma(fieldValues: fields.values(for: .pragma)).noCache {
            noCache = .all
        }
    }
}

extension CacheControl {
    /// The fields directives come from.
    static let directiveFields = HeaderNameList([.cacheControl, .pragma])
}

extension HeaderFields {
    /// The named field parsed as an HTTP date; nil when absent or invalid.
    func date(_ name: HeaderName, now: Date? = nil) -> Date? {
        self[name].flatMap { HTTPDate.parse($0, now: now) }
    }
}
