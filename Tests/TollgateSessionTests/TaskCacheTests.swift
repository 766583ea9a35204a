import Foundation
import NIOCore
import Testing
import TollgateCache
import TollgateHTTP
@testable import TollgateSession

/// ``TaskCache``'s decisions, step by step, without storage or sockets.
@Suite("The cache's part of a task")
struct TaskCacheTests {
    static let url = HTTPURL(string: "http://example.com/a")!
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func stored(status: Int = 200) -> StoredResponse {
        StoredResponse(
            key: CacheKey(url: url), url: url.absoluteString, status: status, reason: "OK",
            headerFields: ["Cache-Control": "max-age=60"], requestTime: now, responseTime: now
        )
    }

    static let hit = CacheHit(stored: stored(), freshness: Freshness(stored(), now: now))

    static func revalidation(staleIfError: Bool) -> Revalidation {
        Revalidation(stored: stored(), conditionalHeaders: ["If-None-Match": "\"x\""], staleIfErrorAllowed: staleIfError)
    }

    @Test("A fresh or acceptably stale hit is served; stale-while-revalidate also revalidates after")
    func hitsAreServed() {
        var cache = TaskCache()
        let lookedUp = cache.lookedUp(.fresh(Self.hit), stored: true, singleRange: nil, policy: .protocol)
        #expect(lookedUp == .serve(Self.hit, stale: false, revalidateAfter: false))
        let lookedUp2 = cache.lookedUp(.staleAcceptable(Self.hit), stored: true, singleRange: nil, policy: .protocol)
        #expect(lookedUp2 == .serve(Self.hit, stale: true, revalidateAfter: false))
        let swr = CacheLookupDecision.staleWhileRevalidate(Self.hit, Self.revalidation(staleIfError: false))
        let lookedUp3 = cache.lookedUp(swr, stored: true, singleRange: nil, policy: .protocol)
        #expect(lookedUp3 == .serve(Self.hit, stale: true, revalidateAfter: true))
        #expect(cache.outcome == nil)  // serving sets it, with the body it sends
    }

    @Test("A decision that serves what the lookup did not return goes to the network")
    func servingWithoutAnEntryGoesToTheNetwork() {
        var cache = TaskCache()
        let lookedUp = cache.lookedUp(.fresh(Self.hit), stored: false, singleRange: nil, policy: .protocol)
        #expect(lookedUp == .network)
        let lookedUp2 = cache.lookedUp(.revalidate(Self.revalidation(staleIfError: false)), stored: false, singleRange: nil, policy: .protocol)
        #expect(lookedUp2 == .network)
    }

    @Test("A stale entry is revalidated, reported stale")
    func staleIsRevalidated() {
        var cache = TaskCache()
        let revalidation = Self.revalidation(staleIfError: false)
        let lookedUp = cache.lookedUp(.revalidate(revalidation), stored: true, singleRange: nil, policy: .protocol)
        #expect(lookedUp == .revalidate(revalidation))
        #expect(cache.outcome == CacheOutcome(result: .stale))
    }

    @Test("A miss reports why, a reload as the request's; a single range goes to the range rules")
    func missesSayWhy() {
        var cache = TaskCache()
        let lookedUp = cache.lookedUp(.miss(.notStored), stored: false, singleRange: nil, policy: .protocol)
        #expect(lookedUp == .miss(range: nil))
        #expect(cache.outcome == CacheOutcome(result: .uriMiss))
        let lookedUp2 = cache.lookedUp(.miss(.varyMismatch), stored: false, singleRange: nil, policy: .protocol)
        #expect(lookedUp2 == .miss(range: nil))
        #expect(cache.outcome == CacheOutcome(result: .varyMiss))
        let lookedUp3 = cache.lookedUp(.miss(.notStored), stored: false, singleRange: nil, policy: .reload)
        #expect(lookedUp3 == .miss(range: nil))
        #expect(cache.outcome == CacheOutcome(result: .request))
        let range = ByteRangeSpec.from(0, through: 9)
        let lookedUp4 = cache.lookedUp(.miss(.method), stored: false, singleRange: range, policy: .protocol)
        #expect(lookedUp4 == .miss(range: range))
        #expect(cache.outcome == CacheOutcome(result: .method))
    }

    @Test("Nothing usable offline fails with the reason; a single range may still be served from pieces")
    func unavailableFails() {
        var cache = TaskCache()
        let lookedUp = cache.lookedUp(.unavailable(.onlyIfCached), stored: false, singleRange: nil, policy: .protocol)
        #expect(lookedUp == .unavailable(why: "only-if-cached, and nothing usable is stored", tryPartial: false))
        let lookedUp2 = cache.lookedUp(.unavailable(.offline), stored: false, singleRange: .from(0, through: 1), policy: .returnCacheDontLoad)
        #expect(lookedUp2 == .unavailable(why: "not in the cache, and the cache policy forbids the network", tryPartial: true))
    }

    @Test("Only a GET waits for a leader, once, and never the leader itself")
    func waitingForALeader() {
        var cache = TaskCache()
        #expect(cache.mayWaitForLeader(method: .get))
        #expect(!cache.mayWaitForLeader(method: .post))
        cache.collapsed = true
        #expect(!cache.mayWaitForLeader(method: .get))
        cache = TaskCache()
        cache.leadsFetch = true
        #expect(!cache.mayWaitForLeader(method: .get))
    }

    @Test("A 304 to a revalidation is the cache's; its body is dropped and the stored response served at the end")
    func notModifiedIsTheCaches() {
        var cache = TaskCache()
        cache.outcome = CacheOutcome(result: .stale)
        #expect(cache.networkRoute == .task)
        let networkHead = cache.networkHead(status: 304, head: HTTPResponseHead(status: 304))
        #expect(!networkHead)  // not revalidating: the task's
        cache.revalidation = (CacheEntry(id: CacheEntryID(rawValue: 1), response: Self.stored(), body: .inline(ByteBuffer())), Self.revalidation(staleIfError: false))
        let networkHead2 = cache.networkHead(status: 304, head: HTTPResponseHead(status: 304))
        #expect(networkHead2)
        #expect(cache.networkRoute == .cacheAnswers)
        #expect(cache.outcome?.forwardStatus == nil)
    }

    @Test("A 5xx to a revalidation is answered stale only when stale-if-error allows; the status is reported")
    func serverErrorServesStaleWhenAllowed() {
        let entry = CacheEntry(id: CacheEntryID(rawValue: 1), response: Self.stored(), body: .inline(ByteBuffer()))
        var strict = TaskCache()
        strict.outcome = CacheOutcome(result: .stale)
        strict.revalidation = (entry, Self.revalidation(staleIfError: false))
        let networkHead = strict.networkHead(status: 503, head: HTTPResponseHead(status: 503))
        #expect(!networkHead)
        #expect(strict.networkRoute == .task)
        #expect(strict.outcome?.forwardStatus == 503)
        var lenient = TaskCache()
        lenient.outcome = CacheOutcome(result: .stale)
        lenient.revalidation = (entry, Self.revalidation(staleIfError: true))
        let networkHead2 = lenient.networkHead(status: 503, head: HTTPResponseHead(status: 503))
        #expect(networkHead2)
        #expect(lenient.networkRoute == .cacheAnswers)
        #expect(lenient.outcome?.forwardStatus == 503)
        var replaced = TaskCache()
        replaced.revalidation = (entry, Self.revalidation(staleIfError: true))
        let networkHead3 = replaced.networkHead(status: 200, head: HTTPResponseHead(status: 200))
        #expect(!networkHead3)
    }

    @Test("Completing pieces: a 206 is kept, a 200 becomes the task's own response, anything else is ignored")
    func completingPieces() throws {
        var cache = TaskCache()
        let original = Request(url: Self.url)
        cache.completingPieces = original
        #expect(cache.networkRoute == .pieces)
        let piecesHead = cache.piecesHead(status: 206)
        #expect(piecesHead.isKeepPiece)
        let piecesHead2 = cache.piecesHead(status: 412)
        #expect(piecesHead2.isIgnore)
        #expect(cache.networkRoute == .pieces)
        guard case .toTask(let request) = cache.piecesHead(status: 200) else {
            Issue.record("a 200 is the task's response")
            return
        }
        #expect(request.url == original.url)
        #expect(cache.outcome == CacheOutcome(result: .uriMiss))
        #expect(cache.networkRoute == .task)
    }

    @Test("The bytes of a stored body sent: all, a range, or none for HEAD, 304 and 416")
    func bytesSent() {
        #expect(TaskCache.bytesSent(of: .whole, length: 10, bodiless: false) == 0..<10)
        #expect(TaskCache.bytesSent(of: .forward, length: 10, bodiless: false) == 0..<10)
        #expect(TaskCache.bytesSent(of: .part(2..<5), length: 10, bodiless: false) == 2..<5)
        #expect(TaskCache.bytesSent(of: .unsatisfiable, length: 10, bodiless: false) == nil)
        #expect(TaskCache.bytesSent(of: .whole, length: 10, bodiless: true) == nil)
    }

    @Test("Pieces are completed only when one gap is left")
    func onlyGap() {
        #expect(TaskCache.onlyGap(in: [0..<5], length: 10) == 5..<10)
        #expect(TaskCache.onlyGap(in: [5..<10], length: 10) == 0..<5)
        #expect(TaskCache.onlyGap(in: [0..<3, 6..<10], length: 10) == 3..<6)
        #expect(TaskCache.onlyGap(in: [0..<3, 6..<8], length: 10) == nil)
        #expect(TaskCache.onlyGap(in: [0..<10], length: 10) == nil)
    }

    @Test("A failed writer stores nothing and says why: over the limit, not its length, or the storage failed")
    func writerFailure() {
        var cache = TaskCache()
        cache.outcome = CacheOutcome(result: .uriMiss, stored: true)
        cache.writerFailed(CacheStoreError.bodyTooLarge)
        #expect(cache.outcome == CacheOutcome(result: .uriMiss, stored: false, detail: "size-limit"))
        cache.writerFailed(CacheStoreError.truncatedBody)
        #expect(cache.outcome?.detail == "truncated")
        struct DiskFull: Error {}
        cache.writerFailed(DiskFull())
        #expect(cache.outcome?.detail == "storage-error")
    }

    @Test("Ending hands over the led key once and forgets the writers")
    func release() {
        var cache = TaskCache()
        cache.key = CacheKey(url: Self.url)
        cache.leadsFetch = true
        let release = cache.release()
        #expect(release.ledKey == CacheKey(url: Self.url))
        let release2 = cache.release()
        #expect(release2.ledKey == nil)
        #expect(!cache.leadsFetch)
    }
}

extension TaskCache.PiecesHeadStep {
    fileprivate var isKeepPiece: Bool { if case .keepPiece = self { true } else { false } }
    fileprivate var isIgnore: Bool { if case .ignore = self { true } else { false } }
}
