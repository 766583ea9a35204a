public import TollgateHTTP

extension CacheRules {
    /// Whether `response` to the POST `request` may be stored as the answer to later GET (and
    /// HEAD) requests for the same URI (RFC 9110 §9.3.3, §8.7): a 200 or 203 with explicit
    /// freshness whose single `Content-Location` resolves to the request's target URI — the
    /// origin saying the content is the resource's current representation. Without that, what a
    /// POST got depends on its body, and no other request may be given it.
    public func postResponseAnswersGET(request: HTTPRequestHead, response: HTTPResponseHead) -> Bool {
        guard request.method == .post, response.status == 200 || response.status == 203 else { return false }
        let locations = response.headerFields.values(for: .contentLocation)
        guard locations.count == 1, let target = try? request.url.resolving(locations[0]),
            CacheKey(url: target) == CacheKey(url: request.url)
        else { return false }
        let control = responseControl(response.headerFields)
        return control.maxAge != nil || (isShared && control.sMaxAge != nil) || response.headerFields.contains(.expires)
    }
}
