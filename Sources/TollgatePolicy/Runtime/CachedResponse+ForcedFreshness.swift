import TollgateCache
import TollgateHTTP
public import TollgateSession

extension CachedResponse {
    /// A copy whose headers make it fresh for `ttl` from when it was received (a rule's
    /// `cache.force-ttl`), the answer ``PolicySessionDelegate`` gives `willCacheResponse`.
    ///
    /// Exactly what changes, in the response head's fields only (status, request, body length
    /// and times stay):
    ///
    /// - The Cache-Control field lines become one line, parsed and re-serialized
    ///   (``CacheControl/description``), with
    ///   - `s-maxage=N` set (replacing any `s-maxage`), where N is `ttl` in whole seconds
    ///     (rounded up) plus the response's age when it was received (RFC 9111 §4.2.3
    ///     `corrected_initial_age`, from `Age`, `Date`, ``requestTime`` and ``responseTime``,
    ///     in whole seconds rounded down as an Age field is), so that the cache, which counts
    ///     that age again, sees it fresh for `ttl` from its arrival. A shared cache takes its
    ///     lifetime from `s-maxage` before `max-age` and `Expires` (§4.2.1), so those stay as
    ///     they were for the clients' own caches.
    ///   - with `sharedCache` false (`cache.kind: private`, which ignores `s-maxage`), `max-age=N`
    ///     set as well.
    ///   - an unqualified `no-cache` removed (it would make every hit a revalidation). The
    ///     qualified form (`no-cache="Set-Cookie"`), which only withholds fields, stays.
    /// - Nothing else: `must-revalidate`, `proxy-revalidate`, `stale-while-revalidate` and the
    ///   other directives apply once the forced lifetime is over; `Expires`, `Age`, `Date` and
    ///   `Pragma` are unchanged (Pragma is not read when a Cache-Control field is present).
    ///
    /// It never makes a response storable that the HTTP rules refuse (`no-store`, `private` in a
    /// shared cache): the session asks `willCacheResponse` only about responses they allow.
    ///
    /// - Parameters:
    ///   - ttl: how long it stays fresh from its arrival.
    ///   - sharedCache: whether the cache follows the shared-cache rules (`cache.kind`).
    public func forcingFreshness(for ttl: Duration, sharedCache: Bool = true) -> CachedResponse {
        let initialAge = Freshness.currentAge(
            headerFields: response.headerFields,
            requestTime: requestTime,
            responseTime: responseTime,
            now: responseTime
        )
        let ttlSeconds = Double(ttl.components.seconds) + Double(ttl.components.attoseconds) / 1e18
        let limit = Double(CacheControl.maximumDeltaSeconds)
        let forced = Int(min(limit, ttlSeconds.rounded(.up) + max(0, initialAge).rounded(.down)))

        var control = CacheControl(fieldValues: response.headerFields.values(for: .cacheControl))
        control.sMaxAge = forced
        if !sharedCache { control.maxAge = forced }
        if control.noCache == .all { control.noCache = nil }

        var copy = self
        copy.response.headerFields.replaceOrAdd(name: .cacheControl, value: control.description)
        return copy
    }
}
