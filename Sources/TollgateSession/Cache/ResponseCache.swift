import Foundation
import NIOConcurrencyHelpers
import NIOCore
public import NIOPosix
public import TollgateCache
import TollgateHTTP

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

    private let leaders = NIOLockedValueBox<[CacheKey: Leader]>([:])
    private let backgroundRevalidations = NIOLockedValueBox<Set<CacheKey>>([])

    /// Wraps an open store.
    public init(store: CacheStore, threadPool: NIOThreadPool = .singleton) {
        self.store = store
        self.threadPool = threadPool
    }

    /// Opens (or creates) the store at `path` with a capacity of `maxSize` bytes.
    public convenience init(path: String, maxSize: Int64, shared: Bool = true) throws {
        let store = try CacheStore(options: CacheStoreOptions(path: path, maxSize: maxSize, rules: shared ? .shared : .private))
        self.init(store: store)
    }

    /// The largest body stored (the seeds' 5 % of capacity).
    public var maximumEntrySize: Int64 { rules.maximumBodyLength(capacity: store.options.maxSize) }

    /// The key a request is stored under, or nil when its method is not cached.
    func key(for request: HTTPRequestHead) -> CacheKey? {
        CacheKey(request: request, normalizer: store.options.keyNormalizer)
    }

    /// Empties the cache (`Session.reset()`).
    public func removeAll() {
        try? store.removeAll()
    }

    /// Runs blocking storage work off the event loop.
    func offLoop<T: Sendable>(on eventLoop: any EventLoop, _ work: @escaping @Sendable () throws -> T) -> EventLoopFuture<T> {
        threadPool.runIfActive(eventLoop: eventLoop, work)
    }

    // MARK: collapsing

    /// Makes the caller the leader for `key` (returns nil), or returns a future that completes
    /// when the current leader is done.
    func joinOrLead(_ key: CacheKey, on eventLoop: any EventLoop) -> EventLoopFuture<Void>? {
        leaders.withLockedValue { leaders -> EventLoopFuture<Void>? in
            if leaders[key] != nil {
                let promise = eventLoop.makePromise(of: Void.self)
                leaders[key]!.waiters.append(promise)
                return promise.futureResult
            }
            leaders[key] = Leader()
            return nil
        }
    }

    /// The leader for `key` finished (stored or not): its waiters look again.
    func finishLeading(_ key: CacheKey) {
        let waiters = leaders.withLockedValue { $0.removeValue(forKey: key)?.waiters ?? [] }
        for waiter in waiters { waiter.succeed(()) }
    }

    /// Claims the one background revalidation allowed per key at a time.
    func claimBackgroundRevalidation(_ key: CacheKey) -> Bool {
        backgroundRevalidations.withLockedValue { $0.insert(key).inserted }
    }

    func finishBackgroundRevalidation(_ key: CacheKey) {
        _ = backgroundRevalidations.withLockedValue { $0.remove(key) }
    }
}
