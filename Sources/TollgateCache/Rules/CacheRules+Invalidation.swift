public import TollgateHTTP

extension CacheRules {
    /// The keys to drop after `response` answered the unsafe `request` (RFC 9111 §4.4).
    ///
    /// Only after a non-error response (2xx or 3xx) to a method that is not known to be safe:
    /// the target URI, and the URIs in Location and Content-Location when they have the same
    /// origin as the target (a response must not be able to purge another origin's entries).
    /// Dropping is the strongest form of "invalidate" §4.4 allows. Keys are built with the
    /// same normalizer lookups use, so the dropped entries are the ones lookups would find.
    public func invalidations(
        for request: HTTPRequestHead,
        response: HTTPResponseHead,
        normalizer: CacheKeyNormalizer = .standard
    ) -> [CacheKey] {
        guard !request.method.isSafe, (200..<400).contains(response.status) else { return [] }
        var keys = [CacheKey(url: request.url, normalizer: normalizer)]
        for name in ["Location", "Content-Location"] {
            guard let reference = response.headerFields[name],
                let target = try? request.url.resolving(reference), target.isSameOrigin(as: request.url)
            else { continue }
            let key = CacheKey(url: target, normalizer: normalizer)
            if !keys.contains(key) { keys.append(key) }
        }
        return keys
    }

    /// Whether `stored` is selected by `request`'s Vary'd fields (§4.1).
    public func varyMatches(stored: StoredResponse, request: HTTPRequestHead) -> Bool {
        VaryMatching.matches(stored, request: request.headerFields)
    }
}
