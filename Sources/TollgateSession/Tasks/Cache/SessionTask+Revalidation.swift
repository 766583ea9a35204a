import Foundation
import NIOCore
import TollgateCache
import TollgateHTTP
import TollgateLoop

/// The network's answer to a conditional request the cache sent (RFC 9111 §4.3): a 304 updates
/// and serves the stored response, a 5xx or a failure serves it stale when stale-if-error allows,
/// anything else replaces it. Also the invalidation an unsafe request's success sets off (§4.4).
extension SessionTask {
    /// Cache work on a network response head. Returns true when the cache answers instead
    /// (a 304 to a revalidation, or a stale response allowed on a 5xx).
    func cacheHandlesNetworkHead(_ head: HTTPResponseHead) -> Bool {
        guard let cache = session.configuration.responseCache else { return false }
        if engine.cache.invalidatesOnSuccess, head.status < 400, let request = engine.request {
            let keys = cache.rules.invalidations(for: request.head, response: head, normalizer: cache.store.options.keyNormalizer)
            if !keys.isEmpty { engine.cache.invalidationRemoval = cache.invalidate(keys, at: Date(), on: eventLoop) }
        }
        return engine.cache.networkHead(status: head.status, head: head)
    }

    /// The 304 or 5xx the cache answers for has ended: serve the stored response.
    func finishCacheAnsweredExchange() {
        guard let cache = session.configuration.responseCache, let (entry, _) = engine.cache.revalidation,
            let original = engine.cache.clientRequest
        else { return }
        engine.cache.revalidation = nil
        if engine.cache.serveStaleAfterExchange {
            engine.cache.serveStaleAfterExchange = false
            serveStaleCopy(of: entry, request: original, cache: cache)
            return
        }
        guard let notModified = engine.cache.notModified else { return }
        engine.cache.notModified = nil
        let requestTime = engine.requestDate ?? TickClock.date
        let responseTime = engine.responseDate ?? TickClock.date
        if cache.store.isReadOnly {
            // Nothing is written: the stored response is served as the 304 updates it.
            let merged = cache.rules.merge304(stored: entry.response, notModified: notModified, requestTime: requestTime, responseTime: responseTime)
            serveRevalidated(merged, entry: entry, request: original, cache: cache)
            return
        }
        let mark = engine.machine.mark
        cache.offLoop(on: eventLoop) {
            try cache.store.updateHeaders(of: entry.id, notModified: notModified, requestTime: requestTime, responseTime: responseTime)
        }.whenComplete { [self] result in
            guard engine.machine.isStill(at: mark) else { return }  // cancelled meanwhile
            serveRevalidated(try? result.get(), entry: entry, request: original, cache: cache)
        }
    }

    /// Serves the stored response as a 304 updated it (`updated`), or asks again without
    /// conditions when the 304 did not identify it or it is gone (nil, §4.3.4).
    private func serveRevalidated(_ updated: StoredResponse?, entry: CacheEntry, request original: Request, cache: ResponseCache) {
        guard let updated else {
            engine.cache.outcome = CacheOutcome(result: .stale, forwardStatus: 304, detail: "validator-mismatch")
            sendToNetwork(original)
            return
        }
        let hit = CacheHit(stored: updated, freshness: Freshness(
            headerFields: updated.headerFields, status: updated.status, requestTime: updated.requestTime,
            responseTime: updated.responseTime, now: TickClock.date, rules: cache.rules
        ))
        let outcome = CacheOutcome(result: .stale, forwardStatus: 304)
        if !serveStored(hit: hit, entry: entry, request: original, stale: false, outcome: outcome) {
            sendToNetwork(original)
        }
    }

    /// Serves a stale stored response because the origin failed (stale-if-error).
    func serveStaleCopy(of entry: CacheEntry, request: Request, cache: ResponseCache) {
        let hit = CacheHit(stored: entry.response, freshness: Freshness(
            headerFields: entry.response.headerFields, status: entry.response.status, requestTime: entry.response.requestTime,
            responseTime: entry.response.responseTime, now: TickClock.date, rules: cache.rules
        ))
        var outcome = engine.cache.outcome ?? CacheOutcome(result: .stale)
        outcome.detail = "stale-if-error"
        if !serveStored(hit: hit, entry: entry, request: request, stale: true, outcome: outcome) {
            fail(SessionError(.resourceUnavailable, request.url, "the origin failed and the stored copy is gone"))
        }
    }

    /// On a network failure while revalidating: serve the stale copy when stale-if-error allows.
    func servesStaleOnFailure() -> Bool {
        guard !engine.responseDelivered, let cache = session.configuration.responseCache,
            let (entry, revalidation) = engine.cache.revalidation, revalidation.staleIfErrorAllowed,
            let request = engine.cache.clientRequest
        else { return false }
        engine.cache.revalidation = nil
        serveStaleCopy(of: entry, request: request, cache: cache)
        return true
    }
}
