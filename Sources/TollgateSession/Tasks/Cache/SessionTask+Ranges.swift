import Foundation
import NIOCore
import TollgateCache
import TollgateHTTP
import TollgateLoop

/// The cache's part in Range requests (RFC 9110 §14, RFC 9111 §3.3–3.4): ranges served from
/// complete entries and from partial content, 206s and cut 200s kept as pieces, and misses
/// fetched whole when `cache.range-offset-limit` says so.
extension SessionTask {
    /// How a stored response answers the task's Range (several ranges only reach here when the
    /// network may not be used: the whole response is served, as §14.2 allows).
    func servedRange(of hit: CacheHit, length: Int64, request: Request, cache: ResponseCache) -> RangeAnswer {
        let answer = cache.rules.rangeAnswer(request: request.head, status: hit.stored.status, storedFields: hit.stored.headerFields, length: length)
        return answer == .forward ? .whole : answer
    }

    /// A Range request found no usable complete entry: serve it from partial content when that
    /// covers it, else fetch the whole response (and cut the range from it) or send the Range on.
    func missWithRange(
        _ request: Request, _ range: ByteRangeSpec, key: CacheKey, cache: ResponseCache, policy: RequestCachePolicy, now: Date
    ) -> Bool {
        if serveFromPartial(request, key: key, cache: cache, policy: policy, now: now) { return true }
        // A download going on from resume data holds the first bytes itself: only the rest is fetched.
        guard engine.resume == nil, cache.rules.fetchesWhole(rangeStart: range.knownStart) else {
            // The Range goes upstream (the 206 kept as a piece), but not while another task is
            // fetching the whole response: the range is cut from that once it is stored.
            return collapseIfAnotherTaskFetches(request, key: key, cache: cache, mayLead: false)
        }
        // A task waiting for another's fetch looks again with its Range, and is served from the result.
        if collapseIfAnotherTaskFetches(request, key: key, cache: cache) { return true }
        var whole = request
        whole.headerFields.remove(CacheRules.rangeField)
        whole.headerFields.remove(CacheRules.ifRangeField)
        engine.cache.rangeCut = RangeCut(request: request.head)
        sendToNetwork(whole)
        return true
    }

    /// Serves a single-range request from what is held in pieces for `key`, when the pieces
    /// cover the range, its If-Range names them, and they are fresh (or the policy takes stale).
    func serveFromPartial(_ request: Request, key: CacheKey, cache: ResponseCache, policy: RequestCachePolicy, now: Date) -> Bool {
        guard let single = CacheRules.byteRanges(of: request.head)?.single, let partial = cache.store.partialContent(for: key)
        else { return false }
        if let ifRange = request.headerFields[CacheRules.ifRangeField],
            !CacheRules.ifRangeHolds(ifRange, storedFields: partial.response.headerFields)
        {
            return false  // the client wants the whole response if it changed: only the origin has it
        }
        if let range = single.resolve(length: partial.completeLength), !partial.covers(range) { return false }
        let hit: CacheHit
        let stale: Bool
        switch cache.rules.decide(request: request.head, policy: policy, stored: partial.response, now: now) {
        case .fresh(let found): (hit, stale) = (found, false)
        case .staleAcceptable(let found): (hit, stale) = (found, true)
        default: return false
        }
        let entry = CacheEntry(
            id: CacheEntryID(rawValue: 0), response: partial.response, body: .file(path: partial.path, length: partial.completeLength)
        )
        let outcome = CacheOutcome(result: .hit, detail: "partial")
        return serveStored(hit: hit, entry: entry, request: request, stale: stale, outcome: outcome, now: now)
    }

    /// Starts keeping a network 206 as a piece, when the response would be storable as a 200.
    func beginStoringPiece(_ head: HTTPResponseHead, request: Request, key: CacheKey, cache: ResponseCache, context: StorabilityContext) {
        guard request.method == .get, let contentRange = head.headerFields[CacheRules.contentRangeField].flatMap(ContentRange.init),
            let length = contentRange.completeLength
        else { return }
        var whole = head
        whole.status = 200
        whole.headerFields.remove(CacheRules.contentRangeField)
        whole.headerFields.replaceOrAdd(name: .contentLength, value: String(length))
        let storedRequest = request.head.withoutConditionalFields
        guard case .store = cache.rules.storability(request: storedRequest, response: whole, bodyLength: length, context: context) else {
            return
        }
        do {
            engine.cache.pieceWriter = try cache.store.beginPiece(
                key: key, request: storedRequest, response: head,
                requestTime: engine.requestDate ?? TickClock.date, responseTime: engine.responseDate ?? TickClock.date
            )
            if engine.cache.pieceWriter != nil { engine.cache.outcome?.detail = "partial" }
        } catch {
            engine.cache.pieceWriter = nil
        }
    }

    /// A 206's body ended: asks `willCacheResponse` (the policy's cache rules cover pieces too),
    /// then records the piece off the loop; the task reports stored only when the pieces were
    /// combined into a complete entry.
    func finishStoringPiece(then: @escaping () -> Void) {
        guard let piece = engine.cache.pieceWriter, let cache = session.configuration.responseCache else {
            then()
            return
        }
        engine.cache.pieceWriter = nil
        stopIdleTimer()
        let settled = UncheckedBox(then)
        askToStore(bodyLength: piece.bytesWritten, replaceFields: piece.replaceHeaderFields) { [self] keep in
            guard keep else {
                piece.abort()
                engine.cache.outcome?.detail = "policy"
                settled.value()
                return
            }
            let leading = leadingPieceFromDownload(cache: cache, key: piece.key)
            cache.offLoop(on: eventLoop) {
                let outcome = try piece.finish()
                guard case .kept = outcome, let leading else { return outcome }
                return (try? leading(piece.replacementFields)) ?? outcome
            }.whenComplete { [self] result in
                if case .success(.combined) = result {
                    engine.cache.outcome?.stored = true
                    engine.cache.outcome?.detail = "combined"
                }
                settled.value()
            }
        }
    }

    /// For a download that went on from resume data with a 206: keeps the bytes before the offset,
    /// from its own file, as the first piece (run off the loop when the 206's piece did not make
    /// the response whole) — the cache may not hold them (another process stored them and was
    /// killed, or they were evicted). Nil for any other task.
    private func leadingPieceFromDownload(cache: ResponseCache, key: CacheKey) -> (@Sendable (HeaderFields?) throws -> PartialPieceWriter.Outcome?)? {
        guard let resumed = engine.cache.resumedFile, resumed.offset > 0, let head = response, let request = currentRequest else { return nil }
        let storedRequest = request.head.withoutConditionalFields
        let times = (engine.requestDate ?? TickClock.date, engine.responseDate ?? TickClock.date)
        return { replacement in
            try cache.store.keepLeadingPiece(
                key: key, request: storedRequest, response: head, replacementFields: replacement,
                fromFile: resumed.path, length: resumed.offset, requestTime: times.0, responseTime: times.1
            )
        }
    }

    /// The response was cut short (a failure, a cancel): keeps what arrived of a 200 or 206 with
    /// a strong validator as partial content, off the loop, so a Range request can finish it —
    /// when `willCacheResponse` allows (asked though the task is ending).
    func keepWhatArrived() {
        guard let cache = session.configuration.responseCache else { return }
        if let writer = engine.cache.writer {
            engine.cache.writer = nil
            engine.cache.outcome?.stored = false
            askToStore(bodyLength: writer.bytesWritten, replaceFields: writer.replaceHeaderFields) { [eventLoop] keep in
                guard keep else {
                    writer.abort()
                    return
                }
                _ = cache.offLoop(on: eventLoop) { _ = writer.salvageAsPiece() }
            }
        }
        if let piece = engine.cache.pieceWriter {
            engine.cache.pieceWriter = nil
            askToStore(bodyLength: piece.bytesWritten, replaceFields: piece.replaceHeaderFields) { [eventLoop] keep in
                guard keep else {
                    piece.abort()
                    return
                }
                _ = cache.offLoop(on: eventLoop) { _ = try piece.finish() }
            }
        }
    }

    /// A Range request fetched whole: the head the task receives instead of the 200 (a 206 or a
    /// 416 cut from it); the 200 itself is what the cache stores.
    func applyRangeCut(to head: HTTPResponseHead) -> HTTPResponseHead {
        guard var cut = engine.cache.rangeCut, let cache = session.configuration.responseCache else { return head }
        guard head.status == 200, let length = head.contentLength else {
            engine.cache.rangeCut = nil
            return head
        }
        switch cache.rules.rangeAnswer(request: cut.request, status: 200, storedFields: head.headerFields, length: length) {
        case .part(let range):
            cut.skip = range.lowerBound
            cut.take = Int64(range.count)
            engine.cache.rangeCut = cut
            return head.partialContent(range, of: length)
        case .unsatisfiable:
            cut.skip = length
            cut.take = 0
            engine.cache.rangeCut = cut
            return head.rangeNotSatisfiable(length: length)
        case .whole, .forward:
            engine.cache.rangeCut = nil
            return head
        }
    }
}
