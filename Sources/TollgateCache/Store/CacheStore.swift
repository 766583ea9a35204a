import Foundation
import NIOCore
import TollgateHTTP
import TollgateStore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The cache's storage: an LMDB environment in `options.path` plus a `bodies/` directory.
///
/// Layout (named databases of one environment):
/// - `entries`: key (``CacheKey``, as text) → the ids of its variants (8 bytes each);
/// - `variants`: id → record (``StoredResponse`` metadata, then the body when it is at most
///   `inlineBodyLimit` bytes; larger bodies live in `bodies/<id>.body`);
/// - `lru`: access sequence → id, oldest first; `access`: id → its sequence and last access;
/// - `totals`: `bytes`, `variants`, `hits`, `misses`;
/// - `partials`: key → a response held only in pieces (``PartialContent``), its sparse body
///   in `bodies/partial-<id>.part`.
///
/// Threading: every method may be called from any thread. ``lookup(_:requestHeaders:)`` is
/// synchronous and cheap (a memory-mapped read, no lock held across I/O): it is the hit path
/// and may run on an event loop. Hits are recorded in memory and written to the LRU index
/// in batches by a `StoreWriter` (`accessBatchSize`, `accessFlushInterval`): the LRU order
/// can lag by one batch, and a crash forgets at most one batch of recency, never an entry.
/// Everything that writes (storing, committing a writer, 304 updates, removal, eviction,
/// verify) blocks on disk I/O and fsync: call it off the event loop.
///
/// Crash safety: a large body is written to a temporary file, synced and renamed before the
/// LMDB transaction that points to it commits, so no entry ever points at a partial body;
/// files without an entry (a crash between rename and commit, or between a removal's commit
/// and its unlink) are swept when the store opens. The sweep only runs when no other
/// process has the store open (an advisory lock on `cache.lock`), so `tollgate cache`
/// tools never delete a running proxy's files in progress.
///
/// Open each directory once per process (LMDB's rule) and share the store.
public final class CacheStore: Sendable {
    /// The options it was opened with.
    public let options: CacheStoreOptions
    /// Orphan body files removed when the store opened.
    public let sweptOrphans: Int

    let environment: Environment
    let writer: StoreWriter
    let files: BodyFiles
    let db: Databases
    let state: Locked<State>
    let allocator = ByteBufferAllocator()
    /// Responses decoded by lookups, reused while their records are unchanged.
    let decodedRecords = DecodedRecords()
    /// Lookups' variants by key, answered from memory while no write has committed.
    let lookupMemo = LookupMemo()
    private let lockDescriptor: Int32

    /// The handles of the store's databases.
    /// A class, so that a lookup's closures capture it with one retain (five names otherwise).
    final class Databases: Sendable {
        let entries: Database
        let variants: Database
        let lru: Database
        let access: Database
        let totals: Database
        /// Key → ``PartialRecord``: responses held only in pieces (CacheStore+Partial.swift).
        let partials: Database

        init(entries: Database, variants: Database, lru: Database, access: Database, totals: Database, partials: Database) {
            self.entries = entries
            self.variants = variants
            self.lru = lru
            self.access = access
            self.totals = totals
            self.partials = partials
        }
    }

    /// What the store keeps in memory.
    struct State {
        /// The next id of this opening's block (``reserveIDBlock(_:totals:)``).
        var nextID: UInt64
        /// At least the next LRU sequence number; raised to above the index's last one in every
        /// write transaction (``allocateSequence(_:)``), as another process may have used more.
        var nextSequence: UInt64
        /// Hits not yet written to the LRU index: id → time of the latest hit.
        var pendingAccess: [UInt64: Date] = [:]
        var lastFlush: Date
        var hits: UInt64
        var misses: UInt64
        /// Hits and misses counted since they were last added to the stored totals.
        var unwrittenHits: UInt64 = 0
        var unwrittenMisses: UInt64 = 0
        /// Variants evicted to stay under the capacity since the store was opened.
        var evictions: UInt64 = 0
        var closed = false
    }

    /// Opens (creating if needed) the store in `options.path`, and sweeps orphan body files
    /// when no other process has it open.
    ///
    /// - Throws: `StoreError` from LMDB, ``CacheStoreError`` for the directory or lock file.
    public init(options: CacheStoreOptions) throws {
        self.options = options
        let environment = try Environment(
            path: options.path, options: EnvironmentOptions(mapSize: options.mapSize, readOnly: options.readOnly)
        )
        self.environment = environment
        func openDatabase(_ name: String) throws -> Database {
            do {
                return try environment.openDatabase(named: name)
            } catch let error as StoreError where options.readOnly && error == .notFound {
                // A read-only opening creates nothing: a store an older build wrote lacks it.
                throw CacheStoreError.io(ENOENT, "\(options.path) has no \(name) database (not a cache this version wrote; open it once read-write)")
            }
        }
        db = Databases(
            entries: try openDatabase("entries"), variants: try openDatabase("variants"), lru: try openDatabase("lru"),
            access: try openDatabase("access"), totals: try openDatabase("totals"), partials: try openDatabase("partials")
        )
        files = BodyFiles(directory: options.path + "/bodies")
        let db = self.db
        writer = StoreWriter(environment: environment)
        if options.readOnly {
            // Nothing is written, so no ids, no sweep and no lock: the counters are read to
            // start from, and hits are counted in memory only.
            lockDescriptor = -1
            sweptOrphans = 0
            let (hits, misses) = try environment.read { txn in
                (try txn.get("hits", as: UInt64.self, in: db.totals) ?? 0, try txn.get("misses", as: UInt64.self, in: db.totals) ?? 0)
            }
            state = Locked(State(nextID: 0, nextSequence: 0, lastFlush: options.clock(), hits: hits, misses: misses))
            return
        }
        try files.create()

        let lockPath = options.path + "/cache.lock"
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw CacheStoreError.io(errno, "cannot open \(lockPath)") }
        lockDescriptor = fd
        // Alone (exclusive lock granted): sweep, then share the lock like every other opener.
        let alone = flock(fd, LOCK_EX | LOCK_NB) == 0
        let (firstID, lastSequence, hits, misses) = try environment.write { txn in
            let lastAccess: [(key: UInt64, value: UInt64)] = try txn.entries(in: db.lru, reverse: true, limit: 1)
            return (
                try Self.reserveIDBlock(txn, totals: db.totals), lastAccess.first?.key ?? 0,
                try txn.get("hits", as: UInt64.self, in: db.totals) ?? 0,
                try txn.get("misses", as: UInt64.self, in: db.totals) ?? 0
            )
        }
        state = Locked(
            State(
                nextID: firstID,
                nextSequence: lastSequence + 1,
                lastFlush: options.clock(),
                hits: hits,
                misses: misses
            )
        )
        sweptOrphans = alone ? Self.sweep(files, environment: environment, variants: db.variants, partials: db.partials) : 0
        flock(fd, LOCK_SH)
    }

    deinit {
        let closed = state.withLock { $0.closed }
        if !closed { close() }
    }

    /// Writes pending hits and counters, stops the writer and closes the environment; later
    /// calls throw ``CacheStoreError/closed``. Idempotent. In-flight writers fail to commit.
    public func close() {
        let wasClosed = state.withLock { state in
            defer { state.closed = true }
            return state.closed
        }
        guard !wasClosed else { return }
        writer.shutdown()
        if !options.readOnly { try? writePendingAccess() }
        environment.close()
        if lockDescriptor >= 0 { systemClose(lockDescriptor) }
    }

    /// Throws ``CacheStoreError/closed`` once closed.
    func checkOpen() throws {
        if state.withLock({ $0.closed }) { throw CacheStoreError.closed }
    }

    /// Throws ``CacheStoreError/closed`` once closed, ``CacheStoreError/readOnly`` when opened so:
    /// every change to the store begins with it.
    func checkWritable() throws {
        try checkOpen()
        if options.readOnly { throw CacheStoreError.readOnly }
    }

    /// Whether the store was opened read-only (``CacheStoreOptions/readOnly``).
    public var isReadOnly: Bool { options.readOnly }

    /// A fresh variant id.
    func allocateID() -> UInt64 {
        state.withLock { state in
            defer { state.nextID += 1 }
            // 2^40 ids an opening: 35 years of a thousand stores a second.
            precondition(state.nextID & Self.idsPerBlockMask != 0, "the store opening's block of ids is used up")
            return state.nextID
        }
    }

    /// Ids of one opening: its block number in the high 24 bits, a count in the low 40.
    static let idBlockShift: UInt64 = 40
    static let idsPerBlockMask: UInt64 = (1 << idBlockShift) - 1

    /// Reserves this opening's block of ids in `txn` and returns its first id.
    ///
    /// Several processes may have the store open at once (a proxy and `tollgate warm`, two
    /// proxies, the cache commands), and an id names both a variant's record and its body file:
    /// ids counted on from the last one stored, as each process did, collided — one process's
    /// commit replaced the other's record and renamed its body over the other's file, so a URL
    /// was answered with another URL's body. Each opening now takes a block of its own from a
    /// counter in the store. Ids stored before blocks existed counted up from 1: block 0.
    static func reserveIDBlock(_ txn: WriteTransaction, totals: Database) throws -> UInt64 {
        let block = (try txn.get("id-blocks", as: UInt64.self, in: totals) ?? 0) + 1
        try txn.put("id-blocks", block, in: totals)
        return block << idBlockShift | 1
    }

    /// A fresh LRU sequence number in `txn`: above every one in the index, which another process
    /// may have added to since this one last wrote (write transactions are serialized across
    /// processes, so the index's last key is current here).
    func allocateSequence(_ txn: WriteTransaction) throws -> UInt64 {
        let last: [(key: UInt64, value: UInt64)] = try txn.entries(in: db.lru, reverse: true, limit: 1)
        let floor = (last.first?.key ?? 0) + 1
        return state.withLock { state in
            state.nextSequence = max(state.nextSequence, floor)
            defer { state.nextSequence += 1 }
            return state.nextSequence
        }
    }

    /// Removes body files no record points at, and every temporary file.
    private static func sweep(_ files: BodyFiles, environment: Environment, variants: Database, partials: Database) -> Int {
        var removed = 0
        let partialFiles = Self.partialFileNames(environment: environment, partials: partials)
        for name in files.names() {
            if name.hasPrefix(BodyFiles.partialPrefix) {
                if !partialFiles.contains(name) {
                    files.remove(name)
                    removed += 1
                }
                continue
            }
            if name.hasPrefix(BodyFiles.temporaryPrefix) {
                files.remove(name)
                removed += 1
                continue
            }
            guard let id = BodyFiles.id(fromFinalName: name) else { continue }  // not ours: leave it
            let referenced =
                (try? environment.read { txn in
                    try txn.withValue(forKey: id, in: variants) { record in
                        StoredResponse.decode(record: record)?.response.bodyLocation == .file(name)
                    }
                }) ?? nil
            if referenced != true {
                files.remove(name)
                removed += 1
            }
        }
        if removed > 0 { try? files.syncDirectory() }
        return removed
    }
}
