import Foundation
import TollgateCache
import TollgateHTTP

/// How a `map-local` file answers a GET or HEAD, as a static file server answers (nginx's
/// `root`, a development server's static files): with validators made from the file — an
/// `ETag` of its modification time and length, as nginx makes it, and `Last-Modified` — and the
/// request's preconditions (RFC 9110 §13.2.2) and `Range` (§14.2) decided against them.
///
/// Every answer says `Cache-Control: no-cache`: a browser would keep a file that has only
/// `Last-Modified` fresh for a tenth of its age (RFC 9111 §4.2.2) and not see a mock edited
/// meanwhile; so it asks each time, and an unchanged file costs it a 304. A rule's
/// `response-headers` may say otherwise.
struct LocalFileAnswer: Equatable {
    /// 200, 206, 304, 412 or 416.
    var status: Int
    /// The answer's fields: the validators and `Cache-Control` always; `Content-Type`,
    /// `Content-Length` and `Accept-Ranges` with a body; `Content-Range` on a 206 and a 416.
    var fields: HeaderFields
    /// The bytes of the file the body carries (half-open); nil when the answer has no body.
    var bytes: Range<Int64>?

    /// The answer to `request` from a file of `length` bytes last modified at `modified`
    /// (HTTP dates have whole seconds: the fraction is dropped), whose media type is `contentType`.
    init(request: HTTPRequestHead, length: Int64, modified: Date, contentType: String) {
        let seconds = Int64(modified.timeIntervalSince1970.rounded(.down))
        let lastModified = Date(timeIntervalSince1970: Double(seconds))
        let tag = EntityTag(opaqueTag: String(seconds, radix: 16) + "-" + String(length, radix: 16))
        var validators = HeaderFields()
        if let tag { validators.add(name: .eTag, value: tag.description) }
        validators.add(name: .lastModified, value: HTTPDate.format(lastModified))
        validators.add(name: .cacheControl, value: "no-cache")
        fields = validators
        bytes = nil
        if !Self.preconditionsHold(request.headerFields, tag: tag, lastModified: lastModified) {
            status = 412
            fields.add(name: .contentLength, value: "0")
            return
        }
        if CacheRules.isNotModified(request, responseFields: validators, responseTime: lastModified) {
            status = 304
            return
        }
        let range: Range<Int64>
        switch CacheRules.shared.rangeAnswer(request: request, status: 200, storedFields: validators, length: length) {
        case .whole, .forward:
            // Several ranges are answered with the whole file, as RFC 9110 §14.2 allows.
            status = 200
            range = 0..<length
        case .part(let part):
            status = 206
            range = part
            fields.add(name: CacheRules.contentRangeField, value: "bytes \(part.lowerBound)-\(part.upperBound - 1)/\(length)")
        case .unsatisfiable:
            status = 416
            fields.add(name: CacheRules.contentRangeField, value: "bytes */\(length)")
            fields.add(name: .contentLength, value: "0")
            return
        }
        bytes = range
        fields.add(name: .contentType, value: contentType)
        fields.add(name: .contentLength, value: String(range.count))
        fields.add(name: .acceptRanges, value: "bytes")
    }

    /// If-Match (strong comparison; `*` holds, the file being there) or, without it,
    /// If-Unmodified-Since: false when the client's precondition fails (412). A field that does
    /// not parse is ignored, as §13.1 allows.
    private static func preconditionsHold(_ fields: HeaderFields, tag: EntityTag?, lastModified: Date) -> Bool {
        let ifMatch = fields.values(for: .ifMatch)
        if !ifMatch.isEmpty {
            guard let list = EntityTagList(fieldValues: ifMatch) else { return true }
            return list.matches(tag, using: .strong)
        }
        if let value = fields[.ifUnmodifiedSince], let since = HTTPDate.parse(value) {
            return lastModified <= since
        }
        return true
    }
}
