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
    /// On a GET miss this task leads. Returns true when a request for the missing bytes went out.
    func completePieces(_ request: Request, key: CacheKey, cache: ResponseCache) -> Bool {
        guard request.method == .get, engine.completingPieces == nil,
            !request.headerFields.contains(CacheRules.rangeField),
            !CacheRules.conditionalFieldNames.contains(where: { request.headerFields.contains($0) }),
            let partial = cache.store.partialContent(for: key),
            let ifRange = CacheRules.ifRangeValue(for: partial.response.headerFields),
            let missing = Self.onlyGap(in: partial.covered, length: partial.completeLength)
        else { return false }
        var rest = request
        rest.headerFields.replaceOrAdd(
            name: CacheRules.rangeField,
            value: "bytes=\(missing.lowerBound)-\(missing.upperBound - 1)"
        )
        rest.headerFields.replaceOrAdd(name: CacheRules.ifRangeField, value: ifRange)
        engine.completingPieces = request
        engine.cacheOutcome = CacheOutcome(result: .partial)
        sendToNetwork(rest)
        return true
    }

    /// The one range of `0..<length` that `covered` (sorted, merged) leaves out; nil when there
    /// are none or several.
    static func onlyGap(in covered: [Range<Int64>], length: Int64) -> Range<Int64>? {
        var gaps: [Range<Int64>] = []
        var next: Int64 = 0
        for range in covered {
            if range.lowerBound > next { gaps.append(next..<range.lowerBound) }
            next = max(next, range.upperBound)
        }
        if next < length { gaps.append(next..<length) }
        return gaps.count == 1 ? gaps[0] : nil
    }

    /// The head answering the request for the missing bytes. Returns true when the task does
    /// not get it (a 206 kept as a piece, or an answer after which the whole is asked again).
    func completionTakesHead(_ head: HTTPResponseHead) -> Bool {
        guard let original = engine.completingPieces else { return false }
        if head.status == 200 {
            // The whole response after all: the task's, stored as for the request it made.
            engine.completingPieces = nil
            engine.request = original
            engine.cacheOutcome = CacheOutcome(result: .uriMiss)
            return false
        }
        if head.status == 206 { beginStoringIfAllowed(head) }
        return true
    }

    /// The answer for the missing bytes ended: serve the combined entry, or ask for the whole.
    func finishCompletingPieces() {
        guard let original = engine.completingPieces else { return }
        engine.completingPieces = nil
        guard let cache = session.configuration.responseCache, let key = engine.cacheKey, engine.pieceWriter != nil
        else {
            askWhole(original)
            return
        }
        finishStoringPiece { [self] in
            guard !isDone else { return }
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
        engine.cacheOutcome = CacheOutcome(result: .uriMiss, detail: "partial-not-completed")
        sendToNetwork(original)
    }
}
