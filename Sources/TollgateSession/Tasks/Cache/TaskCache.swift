import Foundation
import NIOCore
import TollgateCache
import TollgateHTTP

/// The cache's part of one task, in the model of OkHttp's `CacheInterceptor`: what the lookup
/// found, what the network exchange is for (the task's response, a revalidation the cache
/// answers, the bytes missing from stored pieces), and the writers storing the response.
///
/// Its steps are pure — the lookup's decision in, the next step out (``lookedUp(_:stored:singleRange:policy:)``);
/// a network head, body piece and end routed (``networkHead(status:head:)``, ``networkBodyRoute``,
/// ``networkEndRoute``) — and the `SessionTask` extensions in this folder run them: they look
/// up and write storage, send stored bodies (all from ``SessionTask/serveStored(hit:entry:request:stale:outcome:now:)``)
/// and send requests. A struct stored in the task's engine: no allocation of its own per request.
struct TaskCache {
    /// What the lookup found, for `Cache-Status`.
    var outcome: CacheOutcome?
    /// The key the task's response is looked up and stored under (nil: not stored).
    var key: CacheKey?
    /// An unsafe request: its success invalidates what its URL and Location name.
    var invalidatesOnSuccess = false
    /// The stored entry a conditional request revalidates, and how.
    var revalidation: (entry: CacheEntry, how: Revalidation)?
    /// The client's own request while the cache sends its conditional version.
    var clientRequest: Request?
    /// A 304 answered the revalidation: the stored response is served once its exchange ended.
    var notModified: HTTPResponseHead?
    /// A 5xx answered the revalidation and stale-if-error allows the stored copy: served once
    /// the exchange ended.
    var serveStaleAfterExchange = false
    /// Streams the network response into storage.
    var writer: CacheEntryWriter?
    /// Keeps a 206 (or a 200 that may be cut) as a piece of partial content.
    var pieceWriter: PartialPieceWriter?
    /// A Range request fetched whole: the range to cut from the 200 for the task.
    var rangeCut: RangeCut?
    /// This task leads the fetch of its key; tasks missing on it wait for its response.
    var leadsFetch = false
    /// This task waited for another's fetch once (it never waits twice).
    var collapsed = false
    /// The stored body file being read for the task.
    var storedFile: StoredFileReader?
    /// The client's whole GET while only the bytes missing from what is held in pieces are asked
    /// of the origin (``SessionTask/completePieces(_:key:cache:)``); nil otherwise.
    var completingPieces: Request?
    /// The removal from storage of what this task's unsafe request invalidated (a storing of the
    /// task's own response waits for it).
    var invalidationRemoval: EventLoopFuture<Void>?
    /// A download that went on from resume data with a 206: its file, and the offset the 206
    /// began at (the file's first bytes complete the cache's partial content when it lacks them).
    var resumedFile: (path: String, offset: Int64)?

    // MARK: begin

    /// What the task does after the lookup.
    enum BeginStep: Equatable {
        /// Answer from storage (`revalidateAfter`: and revalidate in the background).
        case serve(CacheHit, stale: Bool, revalidateAfter: Bool)
        /// Send the conditional request; the cache answers a 304 (``networkHead(status:head:)``).
        case revalidate(Revalidation)
        /// A miss: fetch (a single `range` by the range rules; else wait for a leader, or complete
        /// stored pieces, or go to the network).
        case miss(range: ByteRangeSpec?)
        /// Nothing usable is stored and the network may not be used: fail with `why`, unless
        /// `tryPartial` and stored pieces cover the range.
        case unavailable(why: String, tryPartial: Bool)
        /// The decision served a response the lookup did not return: go on as without a cache.
        case network
    }

    /// The lookup's `decision` (`stored`: an entry was found) becomes the task's next step; the
    /// outcome a miss or a failure reports is recorded here.
    mutating func lookedUp(
        _ decision: CacheLookupDecision, stored: Bool, singleRange: ByteRangeSpec?, policy: RequestCachePolicy
    ) -> BeginStep {
        switch decision {
        case .fresh(let hit):
            return stored ? .serve(hit, stale: false, revalidateAfter: false) : .network
        case .staleAcceptable(let hit):
            return stored ? .serve(hit, stale: true, revalidateAfter: false) : .network
        case .staleWhileRevalidate(let hit, _):
            return stored ? .serve(hit, stale: true, revalidateAfter: true) : .network
        case .revalidate(let revalidation):
            guard stored else { return .network }
            outcome = CacheOutcome(result: .stale)
            return .revalidate(revalidation)
        case .miss(let reason):
            // `reload` skips the lookup, so the rules see nothing stored: it is still a reload.
            outcome = CacheOutcome(result: policy == .reload ? .request : Self.missResult(reason))
            return .miss(range: singleRange)
        case .unavailable(let reason):
            let why = reason == .onlyIfCached
                ? "only-if-cached, and nothing usable is stored"
                : "not in the cache, and the cache policy forbids the network"
            return .unavailable(why: why, tryPartial: singleRange != nil)
        }
    }

    /// The outcome of a miss for `reason`.
    static func missResult(_ reason: CacheLookupDecision.MissReason) -> CacheOutcome.Result {
        switch reason {
        case .notStored: .uriMiss
        case .varyMismatch: .varyMiss
        case .method: .method
        case .reload: .request
        }
    }

    /// Whether this task may wait for another task's fetch of its key: a GET, not waited once
    /// already, and not the leader itself (its retry after a 401 asks again).
    func mayWaitForLeader(method: HTTPMethod) -> Bool {
        method == .get && !collapsed && !leadsFetch
    }

    /// Which bytes of a stored body of `length` bytes are sent: none for a HEAD, a 304 to a
    /// conditional request or a 416; one range; or all.
    static func bytesSent(of answer: RangeAnswer, length: Int64, bodiless: Bool) -> Range<Int64>? {
        if bodiless { return nil }
        switch answer {
        case .part(let range): return range
        case .unsatisfiable: return nil
        case .whole, .forward: return 0..<length
        }
    }

    /// The one range of `0..<length` that `covered` (sorted, merged) leaves out; nil when there
    /// are none or several (then the pieces are not completed).
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

    // MARK: the network exchange

    /// A network response head, while revalidating: true when the cache answers instead of the
    /// head (a 304; a 5xx that stale-if-error allows), the stored response then being served once
    /// the exchange ended.
    mutating func networkHead(status: Int, head: HTTPResponseHead) -> Bool {
        guard let (_, revalidation) = revalidation else { return false }
        if status == 304 {
            notModified = head
            return true
        }
        outcome?.forwardStatus = status
        if status >= 500, revalidation.staleIfErrorAllowed {
            serveStaleAfterExchange = true
            return true
        }
        return false
    }

    /// Where the network exchange's response goes.
    enum NetworkRoute: Equatable {
        /// To the task (and to storage when it is being stored).
        case task
        /// Nowhere: the body of a 304 or a 5xx the cache answers for; the stored response is
        /// served at the end.
        case cacheAnswers
        /// To the stored pieces: the bytes missing from them; the combined entry is served at the end.
        case pieces
    }

    /// Where a network body piece goes, and what the end of the exchange does.
    var networkRoute: NetworkRoute {
        if notModified != nil || serveStaleAfterExchange { return .cacheAnswers }
        if completingPieces != nil { return .pieces }
        return .task
    }

    /// ``networkRoute`` of a task's cache part read in place: the task calls this for every body
    /// piece and end, and reading the getter through the task's engine copied the whole struct
    /// first (9 retains and as many releases each time).
    static func route(of cache: inout TaskCache) -> NetworkRoute { cache.networkRoute }

    /// What a head answering the request for missing bytes does.
    enum PiecesHeadStep {
        /// A 200: the whole response after all, the task's (as for `request`, its own).
        case toTask(request: Request)
        /// A 206: kept as a piece.
        case keepPiece
        /// Anything else: not the task's; the whole is asked for at the end.
        case ignore
    }

    /// The head answering the request for the missing bytes (``completingPieces`` is set).
    mutating func piecesHead(status: Int) -> PiecesHeadStep {
        guard let original = completingPieces else { return .ignore }
        switch status {
        case 200:
            completingPieces = nil
            outcome = CacheOutcome(result: .uriMiss)
            return .toTask(request: original)
        case 206:
            return .keepPiece
        default:
            return .ignore
        }
    }

    /// A storage writer failed on a body piece: nothing is stored, and the outcome says why.
    mutating func writerFailed(_ error: any Error) {
        outcome?.stored = false
        outcome?.detail = Self.notStoredDetail(for: error)
    }

    /// Why storing failed, as Cache-Status and the access log say it: `size-limit` (over the
    /// per-response limit), `truncated` (the body was not its Content-Length), `read-only` (the
    /// cache was opened read-only), else
    /// `storage-error` (the disk or LMDB refused: no space, the directory gone, …).
    static func notStoredDetail(for error: any Error) -> String {
        switch error as? CacheStoreError {
        case .bodyTooLarge?: "size-limit"
        case .truncatedBody?: "truncated"
        case .readOnly?: "read-only"
        default: "storage-error"
        }
    }

    /// Whether `error` is the storage's own trouble (`storage-error`), not the response's.
    static func isStorageFailure(_ error: any Error) -> Bool {
        notStoredDetail(for: error) == "storage-error"
    }

    // MARK: end

    /// What the task still holds of storage when it ends.
    struct Held {
        var writer: CacheEntryWriter?
        var pieceWriter: PartialPieceWriter?
        var storedFile: StoredFileReader?
        /// The key this task led the fetch of (its waiters are let go).
        var ledKey: CacheKey?
    }

    /// The task ends: hands over what must be aborted, closed or let go.
    mutating func release() -> Held {
        let held = Held(writer: writer, pieceWriter: pieceWriter, storedFile: storedFile, ledKey: leadsFetch ? key : nil)
        if writer != nil { outcome?.stored = false }
        writer = nil
        pieceWriter = nil
        storedFile = nil
        leadsFetch = false
        return held
    }
}
