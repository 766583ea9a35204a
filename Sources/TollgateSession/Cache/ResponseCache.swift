import Foundation
import Logging
import NIOConcurrencyHelpers
import Synchronization
import NIOCore
public import NIOPosix
public import TollgateCache
import TollgateHTTP
import TollgateLoop

/// The session's response cache (URLCache's role): RFC 9111 rules from ``TollgateCache`` over
/// an LMDB ``CacheStore``.
///
/// Lookups are synchronous (memory-mapped LMDB reads, on the task's event loop); writes that
/// sync to disk (commit, header updates after a 304, invalidation) run on a thread pool.
/// It also collapses concurrent misses for one key: the first task goes to the origin, the
/// others wait for it (bounded) and then look again.
public final class ResponseCache: Sendable {
    /// The storage.
    public let store: CacheStore
    /// The rules the storage was opened with (shared or private).
    public var rules: CacheRules { store.options.rules }
    let threadPool: NIOThreadPool

    private struct Leader {
        var waiters: [EventLoopPromise<Void>] = []
    }

    private struct Collapsing {
        var leaders: [CacheKey: Leader] = [:]
        /// Keys whose latest response could not be stored, until when misses on them skip
        /// collapsing (Varnish's hit-for-miss): waiting for a leader whose response will not be
        /// stored only delays the waiter, and serializes concurrent requests for that URL.
        var uncacheable: [CacheKey: NIODeadline] = [:]
    }

    /// What a miss does about other tasks fetching the same key.
    enum MissRole {
        /// Fetch, and let later misses on the key wait for this task.
        case lead
        /// Wait for the leader; the future completes when it is done.
        case wait(EventLoopFuture<Void>)
        /// Fetch without leading: the key's responses were lately not storable.
        case pass
    }

    /// How long a key whose response was not storable is passed through without collapsing.
    static let uncacheableMemory: TimeAmount = .seconds(10)
    /// At most this many such keys are remembered (the oldest are forgotten first, roughly).
    static let uncacheableLimit = 4096

    private let collapsing = NIOLockedValueBox(Collapsing())
    private let backgroundRevalidations = NIOLockedValueBox<Set<CacheKey>>([])
    /// Storage failures since the last one logged, and when that was (``noteStorageFailure(_:url:)``).
    private let storageFailures = NIOLockedValueBox<(count: Int, lastLogged: NIODeadline?)>((0, nil))
    /// Keys an unsafe request's success invalidated, with when, until storage has removed their
    /// entries (off the loop): a lookup in between must not serve what they invalidated.
    private let invalidated = NIOLockedValueBox<[CacheKey: Date]>([:])
    /// Whether ``invalidated`` holds any mark: read without the lock on every lookup (nearly
    /// always false), so a hit takes no lock for invalidations that are not there.
    private let hasInvalidations = Atomic<Bool>(false)

    /// Wraps an open store.
    public init(store: CacheStore, threadPool: NIOThreadPool = .singleton) {
        self.store = store
        self.threadPool = threadPool
    }

    /// Opens (or creates) the store at `path` with a capacity of `maxSize` bytes; `targetedFields`
    /// are the RFC 9213 fields its rules honour (``CacheRules/targetedFields``), `rangeOffsetLimit`
    /// when a Range miss is fetched whole (``CacheRules/rangeOffsetLimit``), `maximumVariantsPerKey`
    /// the most Vary variants kept for one URL; `readOnly` opens an
    /// existing store without writing to it (``CacheStoreOptions/readOnly``).
    public convenience init(
        path: String, maxSize: Int64, shared: Bool = true, targetedFields: [String] = [], storesSetCookie: Bool = false,
        rangeOffsetLimit: Int64? = 0, maximumVariantsPerKey: Int = 16, readOnly: Bool = false
    ) throws {
        var rules: CacheRules = shared ? .shared : .private
        rules.targetedFields = targetedFields
        rules.storesSetCookie = storesSetCookie
        rules.rangeOffsetLimit = rangeOffsetLimit
        let store = try CacheStore(
            options: CacheStoreOptions(
                path: path, maxSize: maxSize, rules: rules, maximumVariantsPerKey: maximumVariantsPerKey, readOnly: readOnly
            )
        )
        self.init(store: store)
    }

    /// The largest body stored (the seeds' 5 % of capacity).
    public var maximumEntrySize: Int64 { rules.maximumBodyLength(capacity: store.options.maxSize) }

    /// The key a request is stored under, or nil when its method is not cached.
    func key(for request: HTTPRequestHead) -> CacheKey? {
        CacheKey(request: request, normalizer: store.options.keyNormalizer)
    }

    /// The key for a request with `method` to `url` (nil for a method never stored), without a
    /// request head to build (the session's key rewrite changes only the URL).
    func key(method: HTTPMethod, url: HTTPURL) -> CacheKey? {
        guard method == .get || method == .head else { return nil }
        return CacheKey(url: url, normalizer: store.options.keyNormalizer)
    }

    // MARK: invalidation (§4.4)

    /// Invalidates `keys` at `time`: from now on a lookup on this cache treats what was stored
    /// for them up to `time` as absent (``isInvalidated(_:storedAt:)``), and their entries are
    /// removed from storage off the loop. Called before the unsafe response is delivered, so every
    /// request that starts after the response was sent sees the invalidation in force.
    /// Returns when the entries are removed from storage.
    @discardableResult
    func invalidate(_ keys: [CacheKey], at time: Date, on eventLoop: any EventLoop) -> EventLoopFuture<Void> {
        // A read-only store keeps its entries, so its marks stay for the life of the process: only
        // keys it holds are marked, which bounds them by what it holds (any client may POST).
        let store = self.store
        let keys = store.isReadOnly ? keys.filter { store.holds($0) } : keys
        invalidated.withLockedValue { marks in
            for key in keys { marks[key] = max(time, marks[key] ?? time) }
            if !marks.isEmpty { hasInvalidations.store(true, ordering: .releasing) }
        }
        if store.isReadOnly { return eventLoop.makeSucceededVoidFuture() }
        let removed = offLoop(on: eventLoop) { for key in keys { _ = try? store.remove(key: key) } }
        removed.whenComplete { [self] _ in
            // Entries stored up to `time` are gone now; a later invalidation keeps its own mark.
            invalidated.withLockedValue { marks in
                for key in keys where marks[key] == time { marks[key] = nil }
                if marks.isEmpty { hasInvalidations.store(false, ordering: .releasing) }
            }
        }
        return removed.map { _ in }.recover { _ in }
    }

    /// Whether what was stored for `key` at `storedAt` was invalidated since and is not yet
    /// removed from storage.
    func isInvalidated(_ key: CacheKey, storedAt: Date) -> Bool {
        guard hasInvalidations.load(ordering: .acquiring) else { return false }
        return invalidated.withLockedValue { marks in
            guard let time = marks[key] else { return false }
            return storedAt <= time
        }
    }

    /// A stored entry whose body file no longer has its recorded length (changed on disk behind
    /// the store's back): logged, and removed off the loop; the request that found it goes on as
    /// a miss.
    func discardDamaged(_ entry: CacheEntry, sizeOnDisk: Int64, on eventLoop: any EventLoop) {
        Self.logger.error(
            "a stored body file was changed on disk; the entry is removed and the request goes on as a miss",
            metadata: [
                "url": "\(entry.response.url)", "entry": "\(entry.id)",
                "recorded_bytes": "\(entry.response.bodyLength)", "bytes_on_disk": "\(sizeOnDisk)",
            ]
        )
        let store = self.store
        guard !store.isReadOnly else { return }
        _ = offLoop(on: eventLoop) { _ = try? store.remove(id: entry.id) }
    }

    /// Where the cache's own events are logged.
    static let logger = Logger(label: "tollgate.cache")

    /// Storing failed: an error that says the storage itself is in trouble (a failed write, a
    /// directory gone, LMDB refusing) is logged — at most once every ten seconds, with how many
    /// more there were, as a full disk fails every response — while a body over the limit or not
    /// its Content-Length is the response's own matter and is not.
    func noteStorageFailure(_ error: any Error, url: String?) {
        guard TaskCache.isStorageFailure(error), (error as? CacheStoreError) != .closed else { return }
        let now = TickClock.now
        let report: Int? = storageFailures.withLockedValue { state in
            state.count += 1
            guard state.lastLogged.map({ now - $0 >= Self.storageFailureLogInterval }) ?? true else { return nil }
            defer { (state.lastLogged, state.count) = (now, 0) }
            return state.count
        }
        guard let count = report else { return }
        Self.logger.error(
            "the cache could not store a response; it was passed on unstored",
            metadata: [
                "url": "\(url ?? "-")", "error": "\(error)", "path": "\(store.options.path)",
                "failures_since_last_report": "\(count)",
            ]
        )
    }

    /// At most one storage failure is logged in this long.
    static let storageFailureLogInterval: TimeAmount = .seconds(10)

    /// Empties the cache (`Session.reset()`).
    public func removeAll() {
        try? store.removeAll()
    }

    /// Runs blocking storage work off the event loop.
    func offLoop<T: Sendable>(on eventLoop: any EventLoop, _ work: @escaping @Sendable () throws -> T) -> EventLoopFuture<T> {
        threadPool.runIfActive(eventLoop: eventLoop, work)
    }

    // MARK: collapsing

    /// Makes the caller the leader for `key`, makes it wait for the current leader, or lets it
    /// pass when the key's latest response was not storable. With `mayLead` false the caller
    /// only waits for a leader there is (a Range request, which fetches no whole response).
    func joinOrLead(_ key: CacheKey, on eventLoop: any EventLoop, mayLead: Bool = true) -> MissRole {
        // Nothing is stored in a read-only cache: a waiter would find nothing after the leader.
        if store.isReadOnly { return .pass }
        return collapsing.withLockedValue { state -> MissRole in
            if state.leaders[key] != nil {
                let promise = eventLoop.makePromise(of: Void.self)
                state.leaders[key]!.waiters.append(promise)
                return .wait(promise.futureResult)
            }
            guard mayLead else { return .pass }
            if let until = state.uncacheable[key] {
                if until > TickClock.now { return .pass }
                state.uncacheable[key] = nil
            }
            state.leaders[key] = Leader()
            return .lead
        }
    }

    /// The leader for `key` finished (stored or not): its waiters look again.
    func finishLeading(_ key: CacheKey) {
        let waiters = collapsing.withLockedValue { $0.leaders.removeValue(forKey: key)?.waiters ?? [] }
        for waiter in waiters { waiter.succeed(()) }
    }

    /// A response for `key` was not storable: later misses pass for a while instead of waiting.
    func noteUncacheable(_ key: CacheKey) {
        let until = TickClock.now + Self.uncacheableMemory
        collapsing.withLockedValue { state in
            if state.uncacheable.count >= Self.uncacheableLimit, state.uncacheable[key] == nil {
                let now = TickClock.now
                state.uncacheable = state.uncacheable.filter { $0.value > now }
                if state.uncacheable.count >= Self.uncacheableLimit { state.uncacheable.removeAll() }
            }
            state.uncacheable[key] = until
        }
    }

    /// A response for `key` is being stored: misses on it collapse again.
    func noteStorable(_ key: CacheKey) {
        collapsing.withLockedValue { state in
            if !state.uncacheable.isEmpty { state.uncacheable[key] = nil }
        }
    }

    /// Claims the one background revalidation allowed per key at a time.
    func claimBackgroundRevalidation(_ key: CacheKey) -> Bool {
        backgroundRevalidations.withLockedValue { $0.insert(key).inserted }
    }

    func finishBackgroundRevalidation(_ key: CacheKey) {
        _ = backgroundRevalidations.withLockedValue { $0.remove(key) }
    }
}
