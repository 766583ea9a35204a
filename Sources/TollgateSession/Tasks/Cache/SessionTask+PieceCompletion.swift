import Foundation
import TollgateCache
import TollgateHTTP
import TollgateLoop

/// RFC 9111 §3.3: a GET for a response the cache holds only in pieces asks the origin for the
/// missing bytes alone — one `Range`, with `If-Range` naming the pieces' strong validator — when
/// they are one contiguous range. The 206 is kept as a piece, the pieces are combined into a
/// complete entry, and the task is served that entry (`Cache-Status: fwd=partial`). A 200 (the
/// representation changed, or the origin ignores Range) is the task's response as usual; any
/// other answer, or pieces that did not combine, send the client's request again, whole.
extension SessionTask {
    /// On a GET miss this task leads (or looks again after waiting for a leader). Returns true
    /// when a request for the missing bytes went out.
    ///
    /// A miss that passed instead (the key's latest response was not storable, a few seconds
    /// ago: ``ResponseCache/noteUncacheable(_:)``) does not look for pieces: its response will
    /// most likely not be storable either, and the pass-through then costs no storage read.
    func completePieces(_ request: Request, key: CacheKey, cache: ResponseCache) -> Bool {
        guard engine.cache.leadsFetch || engine.cache.collapsed,
            request.method == .get, engine.cache.completingPieces == nil,
            !request.headerFields.contains(CacheRules.rangeField),
            !CacheRules.conditionalFieldNames.contains(where: { request.headerFields.contains($0) }),
            let partial = cache.store.partialContent(for: key),
            let ifRange = CacheRules.ifRangeValue(for: partial.response.headerFields),
            let missing = TaskCache.onlyGap(in: partial.covered, length: partial.completeLength)
        else { return false }
        var rest = request
        rest.headerFields.replaceOrAdd(
            name: CacheRules.rangeField,
            value: "bytes=\(missing.lowerBound)-\(missing.upperBound - 1)"
        )
        rest.headerFields.replaceOrAdd(name: CacheRules.ifRangeField, value: ifRange)
        engine.cache.completingPieces = request
        engine.cache.outcome = CacheOutcome(result: .partial)
        sendToNetwork(rest)
        return true
    }

    /// The head answering the request for the missing bytes. Returns true when the task does
    /// not get it (a 206 kept as a piece, or an answer after which the whole is asked again).
    func completionTakesHead(_ head: HTTPResponseHead) -> Bool {
        switch engine.cache.piecesHead(status: head.status) {
        case .toTask(let original):
            // The whole response after all: the task's, stored as for the request it made.
            engine.request = original
            return false
        case .keepPiece:
            beginStoringIfAllowed(head)
            return true
        case .ignore:
            return true
        }
    }

    /// The answer for the missing bytes ended: serve the combined entry, or ask for the whole.
    func finishCompletingPieces() {
        guard let original = engine.cache.completingPieces else { return }
        engine.cache.completingPieces = nil
        guard let cache = session.configuration.responseCache, let key = engine.cache.key, engine.cache.pieceWriter != nil
        else {
            askWhole(original)
            return
        }
        let mark = engine.machine.mark
        finishStoringPiece { [self] in
            guard engine.machine.isStill(at: mark) else { return }  // cancelled while it was stored
            let now = TickClock.date
            if let entry = try? cache.store.lookup(key, requestHeaders: original.headerFields) {
                let hit = CacheHit(
                    stored: entry.response,
                    freshness: Freshness(entry.response, now: now, rules: cache.rules)
                )
                let outcome = CacheOutcome(result: .partial, forwardStatus: 206, stored: true)
                if serveStored(hit: hit, entry: entry, request: original, stale: false, outcome: outcome, now: now) {
                    return
                }
            }
            askWhole(original)
        }
    }

    /// Sends the client's request as it is (the pieces could not be completed).
    private func askWhole(_ original: Request) {
        engine.cache.outcome = CacheOutcome(result: .uriMiss, detail: "partial-not-completed")
        sendToNetwork(original)
    }
}
