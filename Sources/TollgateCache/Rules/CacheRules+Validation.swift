public import Foundation
public import TollgateHTTP

extension CacheRules {
    /// The request fields that make a request conditional (RFC 9110 §13.1).
    public static let conditionalFieldNames: [HeaderName] = [
        .ifNoneMatch, .ifModifiedSince, HeaderName("If-Match"), HeaderName("If-Unmodified-Since"), HeaderName("If-Range"),
    ]
    /// ``conditionalFieldNames`` with their key mask.
    static let conditionalFields = HeaderNameList(conditionalFieldNames)

    /// The validators to send when revalidating `stored` (§4.3.1): If-None-Match with its
    /// ETag, else If-Modified-Since with its Last-Modified; empty when it has neither.
    ///
    /// OkHttp also falls back to the Date field; RFC 9111 only allows Last-Modified (a Date
    /// is not a validator), so this does not.
    public func conditionalHeaders(for stored: StoredResponse) -> HeaderFields {
        var fields = HeaderFields()
        if let etag = stored.headerFields[.eTag], EntityTag(etag) != nil {
            fields.add(name: .ifNoneMatch, value: etag)
        } else if let lastModified = stored.headerFields[.lastModified],
            HTTPDate.parse(lastModified, now: stored.responseTime) != nil
        {
            fields.add(name: .ifModifiedSince, value: lastModified)
        }
        return fields
    }

    /// The stored response updated by a 304 Not Modified (§3.2, §4.3.4), or nil when the 304
    /// does not identify it (its validator is not the stored one's) and must not be used.
    ///
    /// Every field the 304 carries replaces the stored lines of that name, except those the
    /// stored body depends on (Content-Length, Content-Encoding, Content-Type, Content-Range)
    /// and those never stored (hop-by-hop, Set-Cookie). The request and response times become
    /// those of the validation exchange, so the age restarts. Selection (§4.3.4): a strong
    /// ETag in the 304 must match the stored ETag strongly, a weak one weakly; without an
    /// ETag, a Last-Modified must equal the stored one. A 304 with no validator is taken to
    /// be about the response whose validators were sent (a lenient reading of §4.3.4, as
    /// OkHttp and most caches do).
    ///
    /// - Parameters:
    ///   - stored: the stored response whose validators were sent.
    ///   - notModified: the 304 response head.
    ///   - requestTime: when the conditional request was sent.
    ///   - responseTime: when the 304 arrived.
    public func merge304(
        stored: StoredResponse,
        notModified: HTTPResponseHead,
        requestTime: Date,
        responseTime: Date
    ) -> StoredResponse? {
        let incoming = notModified.headerFields
        if let etagText = incoming[.eTag] {
            guard let etag = EntityTag(etagText), let storedETag = stored.headerFields[.eTag].flatMap(EntityTag.init),
                etag.matches(storedETag, using: etag.isWeak ? .weak : .strong)
            else { return nil }
        } else if let lastModified = incoming[.lastModified] {
            guard let storedLastModified = stored.headerFields[.lastModified],
                HTTPDate.parse(lastModified) == HTTPDate.parse(storedLastModified), HTTPDate.parse(lastModified) != nil
            else { return nil }
        }
        return updated(stored, with: incoming, requestTime: requestTime, responseTime: responseTime)
    }

    /// The stored GET response updated by a `200` answering a HEAD request that could have
    /// selected it (RFC 9111 §4.3.5), or nil when the HEAD response does not identify it: then
    /// the stored response is to be invalidated.
    ///
    /// It identifies it when it carries at least one validator and each it carries matches the
    /// stored one (an ETag as for a 304, a Last-Modified as the same date), and its
    /// Content-Length, if any, is the stored body's length. The RFC's "matching values for any
    /// received validator fields" is read strictly: a HEAD response without validators could
    /// describe another representation of the same length, and updating would give the stored
    /// body that one's fields. The fields are updated as a 304's are.
    public func mergeHEAD(
        stored: StoredResponse,
        head: HTTPResponseHead,
        requestTime: Date,
        responseTime: Date
    ) -> StoredResponse? {
        guard head.status == 200 else { return nil }
        let incoming = head.headerFields
        guard incoming.contains(.eTag) || incoming.contains(.lastModified) else { return nil }
        if let etagText = incoming[.eTag] {
            guard let etag = EntityTag(etagText), let storedETag = stored.headerFields[.eTag].flatMap(EntityTag.init),
                etag.matches(storedETag, using: etag.isWeak ? .weak : .strong)
            else { return nil }
        }
        if let lastModified = incoming[.lastModified] {
            guard let date = HTTPDate.parse(lastModified), stored.headerFields[.lastModified].flatMap({ HTTPDate.parse($0) }) == date
            else { return nil }
        }
        if let length = head.contentLength, length != stored.bodyLength { return nil }
        return updated(stored, with: incoming, requestTime: requestTime, responseTime: responseTime)
    }

    /// `stored` with the fields of a response about it (a 304, a HEAD's 200): each replaces the
    /// stored lines of its name, except those the stored body depends on and those never stored.
    private func updated(_ stored: StoredResponse, with incoming: HeaderFields, requestTime: Date, responseTime: Date) -> StoredResponse {
        let (update, _) = StoredHeaders.filter(incoming, shared: isShared, keepsCookies: storesSetCookie)
        var merged = stored.headerFields
        var replaced: Set<String> = []
        for field in update {
            let name = field.name.lowercased()
            guard !StoredHeaders.notUpdatedBy304.contains(name) else { continue }
            if replaced.insert(name).inserted { merged.remove(field.name) }
            merged.add(name: field.name, value: field.value)
        }
        var result = stored
        result.headerFields = merged
        result.requestTime = requestTime
        result.responseTime = responseTime
        // The origin confirmed it: a soft purge's mark is answered.
        result.staleSince = nil
        return result
    }

    /// Whether the client's own conditional request is answered with 304 by `stored`
    /// (RFC 9110 §13.2.2, as a cache evaluates it, RFC 9111 §4.3.2).
    ///
    /// If-None-Match, when present, decides alone (weak comparison, `*` matches); otherwise
    /// If-Modified-Since is compared with the stored Last-Modified (or, lacking it, Date):
    /// not modified when that is not later than the given date. Only GET and HEAD.
    public func answersConditional(clientRequest: HTTPRequestHead, stored: StoredResponse) -> Bool {
        Self.isNotModified(clientRequest, responseFields: stored.headerFields, responseTime: stored.responseTime)
    }

    /// Whether `request`'s If-None-Match or If-Modified-Since says the client has the
    /// representation these response fields describe (their ETag, else their Last-Modified or
    /// Date; `responseTime` reads a date in the future as now): the rule of
    /// ``answersConditional(clientRequest:stored:)``, for any response, stored or not.
    public static func isNotModified(_ request: HTTPRequestHead, responseFields: HeaderFields, responseTime: Date) -> Bool {
        guard request.method == .get || request.method == .head else { return false }
        let noneMatch = request.headerFields.values(for: .ifNoneMatch)
        if !noneMatch.isEmpty {
            guard let list = EntityTagList(fieldValues: noneMatch) else { return false }
            if case .any = list { return true }
            return list.matches(responseFields[.eTag].flatMap(EntityTag.init), using: .weak)
        }
        guard let since = request.headerFields.date(.ifModifiedSince),
            let modified = responseFields.date(.lastModified, now: responseTime) ?? responseFields.date(.date, now: responseTime)
        else { return false }
        return modified <= since
    }

    /// The 304 to send a client whose conditional request the stored response answers: the
    /// fields RFC 9110 §15.4.5 requires a 304 to repeat (Cache-Control, Content-Location,
    /// Date, ETag, Expires, Vary) plus Last-Modified and Age.
    public func notModifiedResponse(for hit: CacheHit) -> HTTPResponseHead {
        let full = hit.responseHead
        var fields = HeaderFields()
        for field in full.headerFields
        where Self.notModifiedFields.contains(where: { field.name.equalsIgnoringASCIICase($0) }) {
            fields.add(name: field.name, value: field.value)
        }
        return HTTPResponseHead(status: 304, headerFields: fields)
    }

    private static let notModifiedFields = [
        "Cache-Control", "Content-Location", "Date", "ETag", "Expires", "Vary", "Last-Modified", "Age",
    ]
}

extension HTTPRequestHead {
    /// The request without its conditional fields (``CacheRules/conditionalFieldNames``): what a
    /// cache records and revalidates with, whatever conditions this client added.
    public var withoutConditionalFields: HTTPRequestHead {
        // Most requests have none: then the head itself, not a copy of its box (asked per request).
        guard headerFields.containsAny(of: CacheRules.conditionalFields) else { return self }
        var copy = self
        for name in CacheRules.conditionalFieldNames { copy.headerFields.remove(name) }
        return copy
    }
}
