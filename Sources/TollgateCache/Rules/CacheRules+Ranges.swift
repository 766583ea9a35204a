public import Foundation
public import TollgateHTTP

/// How a cache answers a request's `Range` field from a stored complete response.
public enum RangeAnswer: Sendable, Hashable {
    /// Serve the whole response (no Range, a Range ignored as §14.2 allows, or an If-Range
    /// that does not match what is stored).
    case whole
    /// Serve these bytes (half-open) as a 206 with Content-Range.
    case part(Range<Int64>)
    /// Answer 416 with `Content-Range: bytes */length`.
    case unsatisfiable
    /// Several ranges: the request goes to the origin (the cache composes no
    /// `multipart/byteranges`; see docs/cache-semantics.md).
    case forward
}

extension CacheRules {
    /// The `Range` request field name.
    public static let rangeField = HeaderName("Range")
    /// The `If-Range` request field name.
    public static let ifRangeField = HeaderName("If-Range")
    /// The `Content-Range` response field name.
    public static let contentRangeField = HeaderName("Content-Range")

    /// The single range a GET asks for, nil when it asks for none (no field, or one that is not
    /// a valid `bytes` range set and is ignored) — several ranges are returned as the request.
    public static func byteRanges(of request: HTTPRequestHead) -> ByteRangeRequest? {
        guard request.method == .get, let value = request.headerFields[rangeField] else { return nil }
        return ByteRangeRequest(fieldValue: value)
    }

    /// How to answer `request` from a stored 200 of `length` body bytes with these header
    /// fields (RFC 9110 §14.2, §13.1.5). If-Range is evaluated against the stored validators:
    /// an entity-tag must match the stored ETag strongly, a date must equal the stored
    /// Last-Modified; otherwise the Range is ignored and the whole response is served.
    public func rangeAnswer(request: HTTPRequestHead, status: Int, storedFields: HeaderFields, length: Int64) -> RangeAnswer {
        guard status == 200, let ranges = Self.byteRanges(of: request) else { return .whole }
        if let ifRange = request.headerFields[Self.ifRangeField], !Self.ifRangeHolds(ifRange, storedFields: storedFields) {
            return .whole
        }
        guard let single = ranges.single else { return .forward }
        guard let range = single.resolve(length: length) else { return .unsatisfiable }
        return .part(range)
    }

    /// Whether an If-Range value names the stored representation (§13.1.5).
    public static func ifRangeHolds(_ value: String, storedFields: HeaderFields) -> Bool {
        let trimmed = value.trimmingPrefixSpaces
        if trimmed.hasPrefix("\"") || trimmed.hasPrefix("W/") {
            guard let tag = EntityTag(trimmed), !tag.isWeak,
                let stored = storedFields[.eTag].flatMap(EntityTag.init)
            else { return false }
            return tag.matches(stored, using: .strong)
        }
        guard let date = HTTPDate.parse(trimmed), let stored = storedFields[.lastModified].flatMap({ HTTPDate.parse($0) })
        else { return false }
        return date == stored
    }

    /// The validator a partial response must share with the pieces it is combined with
    /// (RFC 9111 §3.4): its strong ETag, else its Last-Modified; nil when it has neither (such
    /// a response is not kept as partial content).
    public static func combiningValidator(of fields: HeaderFields) -> String? {
        if let etag = fields[.eTag] {
            guard let tag = EntityTag(etag), !tag.isWeak else { return nil }
            return "etag " + tag.description
        }
        if let lastModified = fields[.lastModified], let date = HTTPDate.parse(lastModified) {
            return "last-modified " + HTTPDate.format(date)
        }
        return nil
    }

    /// The `If-Range` value naming the representation with these fields: its strong ETag,
    /// else its Last-Modified (nil with neither).
    public static func ifRangeValue(for fields: HeaderFields) -> String? {
        if let etag = fields[.eTag], let tag = EntityTag(etag), !tag.isWeak { return tag.description }
        return fields[.lastModified]
    }
}

extension String {
    fileprivate var trimmingPrefixSpaces: String {
        String(drop { $0 == " " || $0 == "\t" })
    }
}
