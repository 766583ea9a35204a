public import Foundation
public import TollgateHTTP

extension CacheRules {
    /// Decides how `request` is answered given the stored response the lookup selected.
    ///
    /// In order:
    /// 1. Only GET and HEAD are answered from the cache (HEAD from the GET entry).
    /// 2. Nothing stored, or a Vary mismatch: the network, unless the request may not use it
    ///    (`only-if-cached`, `return-cache-dont-load`): then ``CacheLookupDecision/unavailable(_:)``.
    ///    With `return-cache-dont-load` a variant whose representation the request accepts by
    ///    `Accept` and `Accept-Encoding` is no mismatch (``ContentNegotiation``).
    /// 3. The request cache policy: `reload` ignores what is stored; `return-cache-else-load`
    ///    and `return-cache-dont-load` serve any stored response, fresh or stale;
    ///    `reload-revalidating` always validates.
    /// 4. `protocol` (RFC 9111 §4): `no-cache` in the response (unqualified) or the request
    ///    (or `Pragma: no-cache` without Cache-Control) forces validation. Otherwise the
    ///    response is fresh enough when `age + min-fresh < min(lifetime, request max-age)`.
    ///    A stale response is served when the request's `max-stale` allows it and the
    ///    response does not forbid serving stale (`must-revalidate`; in a shared cache also
    ///    `proxy-revalidate` and `s-maxage`). Within its `stale-while-revalidate` window it
    ///    is served while revalidating in the background, unless the request set freshness
    ///    conditions of its own (max-age, min-fresh) or `must-revalidate`/`proxy-revalidate`
    ///    forbid it. Otherwise it is validated, or, with `only-if-cached`, unavailable.
    ///
    /// The request's own conditional fields are not considered here: after a hit or a
    /// 304, ``answersConditional(clientRequest:stored:)`` tells whether to answer it with 304.
    ///
    /// - Parameters:
    ///   - request: the client's request.
    ///   - policy: the request's cache policy.
    ///   - stored: the variant the lookup selected for the request, if any.
    ///   - now: the current time (injected so that decisions are reproducible).
    ///   - selected: `stored` is what ``CacheStore/lookup(_:requestHeaders:negotiating:)`` chose
    ///     for this very request — its Vary'd fields matched, or (negotiating offline) the request
    ///     accepts it — so it is not matched again (a walk of the request's fields per Vary'd
    ///     field, on every hit). False: matched here.
    public func decide(
        request: HTTPRequestHead,
        policy: RequestCachePolicy,
        stored: StoredResponse?,
        now: Date,
        selected: Bool = false
    ) -> CacheLookupDecision {
        let requestControl = CacheControl(request: request.headerFields)
        let unavailable: CacheLookupDecision.UnavailableReason? =
            policy == .returnCacheDontLoad ? .offline : requestControl.onlyIfCached ? .onlyIfCached : nil
        guard request.method == .get || request.method == .head else {
            return unavailable.map(CacheLookupDecision.unavailable) ?? .miss(.method)
        }
        guard let stored else { return unavailable.map(CacheLookupDecision.unavailable) ?? .miss(.notStored) }
        // Offline, a variant the request accepts by Accept and Accept-Encoding stands in for the
        // one it would select (``ContentNegotiation``).
        guard selected || VaryMatching.matches(stored, request: request.headerFields)
            || policy == .returnCacheDontLoad && ContentNegotiation.accepts(stored, request: request.headerFields)
        else {
            return unavailable.map(CacheLookupDecision.unavailable) ?? .miss(.varyMismatch)
        }

        let responseControl = responseControl(for: stored)
        let freshness = Freshness(stored, cacheControl: responseControl, now: now, rules: self)
        let hit = CacheHit(stored: stored, freshness: freshness, withheldFields: withheldFields(responseControl))
        switch policy {
        case .reload:
            return unavailable.map(CacheLookupDecision.unavailable) ?? .miss(.reload)
        case .returnCacheElseLoad, .returnCacheDontLoad:
            return freshness.isFresh ? .fresh(hit) : .staleAcceptable(hit)
        case .reloadRevalidating:
            return unavailable.map(CacheLookupDecision.unavailable) ?? .revalidate(revalidation(stored, request, now))
        case .protocol:
            break
        }

        let mustValidate = responseControl.noCache == .all || requestControl.noCache != nil
        if !mustValidate {
            var lifetime = freshness.lifetime
            if let maxAge = requestControl.maxAge { lifetime = min(lifetime, Double(maxAge)) }
            let minFresh = Double(requestControl.minFresh ?? 0)
            let age = freshness.currentAge
            if age + minFresh < lifetime { return .fresh(hit) }
            if servesStale(responseControl), let maxStale = requestControl.maxStale {
                switch maxStale {
                case .any: return .staleAcceptable(hit)
                case .seconds(let seconds) where age + minFresh < lifetime + Double(seconds):
                    return .staleAcceptable(hit)
                case .seconds: break
                }
            }
            if !freshness.isFresh, requestControl.maxAge == nil, requestControl.minFresh == nil,
                !responseControl.mustRevalidate, !(isShared && responseControl.proxyRevalidate),
                let window = freshness.staleWhileRevalidate, freshness.staleness <= window
            {
                return .staleWhileRevalidate(hit, revalidation(stored, request, now))
            }
        }
        return unavailable.map(CacheLookupDecision.unavailable) ?? .revalidate(revalidation(stored, request, now))
    }

    /// Whether a stored response may be served after an error reaching the origin (a
    /// connection failure, or a 500, 502, 503 or 504; RFC 5861 §4): its staleness is within
    /// the larger of the response's and the request's `stale-if-error` (and `atLeast`
    /// seconds, the cache operator's own window: a rule's `cache.stale-if-error`), and nothing
    /// forbids serving it stale (`must-revalidate`, `no-cache`; shared: `proxy-revalidate`).
    public func staleIfErrorAllows(stored: StoredResponse, request: HTTPRequestHead, now: Date, atLeast: Double? = nil) -> Bool {
        let responseControl = responseControl(for: stored)
        guard responseControl.noCache != .all, !responseControl.mustRevalidate,
            !(isShared && responseControl.proxyRevalidate)
        else { return false }
        let freshness = Freshness(stored, now: now, rules: self)
        let requestWindow = CacheControl(request: request.headerFields).staleIfError.map(Double.init)
        guard let window = [freshness.staleIfError, requestWindow, atLeast].compactMap({ $0 }).max() else { return false }
        return freshness.staleness <= window
    }

    /// Whether the response lets a stale copy be served when a request's `max-stale` asks for
    /// one (§4.2.4): not with `must-revalidate`, nor in a shared cache with `proxy-revalidate`
    /// or `s-maxage` (which carries proxy-revalidate's meaning, §5.2.2.10).
    func servesStale(_ control: CacheControl) -> Bool {
        if control.mustRevalidate { return false }
        if isShared, control.proxyRevalidate || control.sMaxAge != nil { return false }
        return true
    }

    /// The fields `no-cache="…"` names, which a hit leaves out.
    func withheldFields(_ control: CacheControl) -> [String] {
        if case .listed(let names)? = control.noCache { return names }
        return []
    }

    private func revalidation(_ stored: StoredResponse, _ request: HTTPRequestHead, _ now: Date) -> Revalidation {
        Revalidation(
            stored: stored,
            conditionalHeaders: conditionalHeaders(for: stored),
            staleIfErrorAllowed: staleIfErrorAllows(stored: stored, request: request, now: now)
        )
    }
}
