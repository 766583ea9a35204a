import Foundation
import TollgateCache
import TollgateHTTP
import TollgateLoop

/// RFC 9111 §4.3.5: a `200` answering a HEAD request updates the stored GET response that request
/// could have selected — its fields and freshness, as a 304 would — or, when the HEAD response does
/// not identify it (other validators, another length), invalidates it.
extension SessionTask {
    /// Called with each network response head of a HEAD request.
    func updateStoredFromHEAD(_ head: HTTPResponseHead, key: CacheKey, cache: ResponseCache) {
        guard let request = engine.request, request.method == .head, head.status == 200 else { return }
        let requestHeaders = request.headerFields
        let requestTime = engine.requestDate ?? TickClock.date
        let responseTime = engine.responseDate ?? TickClock.date
        let store = cache.store
        _ = cache.offLoop(on: eventLoop) {
            guard let entry = try store.lookup(key, requestHeaders: requestHeaders) else { return }
            try store.updateHeaders(
                of: entry.id,
                headResponse: head,
                requestTime: requestTime,
                responseTime: responseTime
            )
        }
    }
}
