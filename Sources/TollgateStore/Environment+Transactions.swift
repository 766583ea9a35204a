import CLMDB
import Foundation

extension Environment {
    /// Runs `body` in a read-only transaction: a consistent snapshot as of its start, unaffected
    /// by writes that commit meanwhile. Any number of reads run at once, on any threads.
    ///
    /// The transaction (and every pointer or cursor from it) is valid only inside `body`.
    /// Keep reads short: an old snapshot keeps its pages from being reused, and map growth
    /// waits for running reads.
    public func read<T>(_ body: (ReadTransaction) throws -> T) throws -> T {
        let depth = readDepth.value
        if depth == 0 { mapLock.lockShared() }
        readDepth.value = depth + 1
        defer {
            readDepth.value = depth
            if depth == 0 { mapLock.unlock() }
        }
        var txn: OpaquePointer?
        while true {
            guard let handle else { throw StoreError.closed }
            let rc = mdb_txn_begin(handle, nil, UInt32(MDB_RDONLY), &txn)
            // Another process grew the map: adopt its size, which needs the lock alone.
            if rc == MDB_MAP_RESIZED, depth == 0, writeDepth.value == 0 {
                mapLock.unlock()
                let adopted = Result { try adoptForeignMapSize() }
                mapLock.lockShared()
                try adopted.get()
                continue
            }
            try StoreError.check(rc)
            break
        }
        let transaction = ReadTransaction(environment: self, handle: txn!)
        defer { transaction.abort() }
        return try body(transaction)
    }

    /// Runs `body` in a write transaction, committing when it returns and aborting when it throws.
    ///
    /// Writes are serialized: this waits for any other write in the process. `body` may run
    /// more than once: when the map fills up, the transaction is aborted, the map doubled and
    /// `body` run again from scratch, so keep its side effects inside the transaction.
    ///
    /// - Throws: what `body` throws; `StoreError.readOnly`; `StoreError.nestedTransaction` if
    ///   this thread is already inside a transaction of this environment; `StoreError.mapFull`
    ///   when the map is at `maxMapSize`; or a commit failure.
    public func write<T>(_ body: (WriteTransaction) throws -> T) throws -> T {
        guard !options.readOnly else { throw StoreError.readOnly }
        // A write inside a read could deadlock against map growth, which waits for readers
        // while holding the writer lock; LMDB's own writer mutex is not recursive either.
        guard writeDepth.value == 0, readDepth.value == 0 else { throw StoreError.nestedTransaction }
        writerLock.lock()
        writeDepth.value = 1
        defer {
            writeDepth.value = 0
            writerLock.unlock()
        }
        while true {
            let transaction = try beginWrite()
            let result: T
            do {
                result = try body(transaction)
            } catch {
                transaction.abort()
                if transaction.needsGrowth {
                    try growMap()
                    continue
                }
                throw error
            }
            // The closure may have caught MDB_MAP_FULL itself; LMDB has poisoned the txn anyway.
            if transaction.needsGrowth {
                transaction.abort()
                try growMap()
                continue
            }
            let rc = transaction.commit()
            if rc == MDB_MAP_FULL {  // saving the free list can need pages too
                try growMap()
                continue
            }
            try StoreError.check(rc)
            return result
        }
    }

    /// Returns the handle of the named database, opening it the first time (in a write
    /// transaction, or a read one if the environment is read-only). Handles are cached.
    ///
    /// - Parameter create: create the database if missing. Ignored when read-only.
    /// - Throws: `StoreError.notFound` if it does not exist and is not created;
    ///   `StoreError.databasesFull` past `maxDatabases`; `StoreError.nestedTransaction` when
    ///   called inside a transaction of this environment for a database not opened yet.
    public func openDatabase(named name: String, create: Bool = true) throws -> Database {
        if let database = cachedDatabase(named: name) { return database }
        guard writeDepth.value == 0, readDepth.value == 0 else { throw StoreError.nestedTransaction }
        let database: Database
        if options.readOnly {
            // mdb_dbi_open must not run in two transactions at once; the writer lock
            // serializes it even though this transaction only reads.
            writerLock.lock()
            defer { writerLock.unlock() }
            database = try withHandle { handle in
                var txn: OpaquePointer?
                try StoreError.check(mdb_txn_begin(handle, nil, UInt32(MDB_RDONLY), &txn))
                var dbi = MDB_dbi()
                let rc = mdb_dbi_open(txn, name, 0, &dbi)
                guard rc == MDB_SUCCESS else {
                    mdb_txn_abort(txn)
                    throw StoreError.lmdb(rc)
                }
                try StoreError.check(mdb_txn_commit(txn))  // commit keeps the handle open
                return Database(name: name, dbi: dbi, environmentID: ObjectIdentifier(self))
            }
        } else {
            database = try write { transaction in
                try cachedDatabase(named: name) ?? transaction.openDatabaseHandle(named: name, create: create)
            }
        }
        cacheDatabase(database)
        return database
    }

    /// Begins a top-level write transaction. The caller holds `writerLock`.
    private func beginWrite() throws -> WriteTransaction {
        while true {
            guard let handle else { throw StoreError.closed }
            var txn: OpaquePointer?
            let rc = mdb_txn_begin(handle, nil, 0, &txn)
            if rc == MDB_MAP_RESIZED {
                try resizeMap(to: 0)  // 0: adopt the size another process set
                continue
            }
            try StoreError.check(rc)
            return WriteTransaction(environment: self, handle: txn!, growth: GrowthFlag())
        }
    }

    /// Doubles the map, up to `maxMapSize`. The caller holds `writerLock` with no write
    /// transaction alive, which is when `mdb_env_set_mapsize` is legal.
    private func growMap() throws {
        guard let handle else { throw StoreError.closed }
        var info = MDB_envinfo()
        try StoreError.check(mdb_env_info(handle, &info))
        let current = info.me_mapsize
        var target = current.multipliedReportingOverflow(by: 2).overflow ? Int.max : current * 2
        if let limit = options.maxMapSize {
            guard current < limit else {
                throw StoreError.mapFull.with(message: "the map is full at its limit of \(limit) bytes")
            }
            target = min(target, limit)
        }
        try resizeMap(to: target)
    }

    /// Adopts a map size set by another process. Takes `writerLock` itself.
    private func adoptForeignMapSize() throws {
        writerLock.lock()
        defer { writerLock.unlock() }
        try resizeMap(to: 0)
    }

    /// Remaps at `size` bytes (0: the size recorded in the file). The caller holds
    /// `writerLock`; this waits for running reads, since remapping moves the map.
    private func resizeMap(to size: Int) throws {
        mapLock.lockExclusive()
        defer { mapLock.unlock() }
        guard let handle else { throw StoreError.closed }
        let rc = mdb_env_set_mapsize(handle, size)
        if rc != MDB_SUCCESS {
            // LMDB unmapped the old map before failing to map the new one: unusable now.
            closeHandle()
            throw StoreError.lmdb(rc).with(
                message: "growing the map to \(size) bytes failed (\(StoreError.describe(rc))); environment closed"
            )
        }
    }
}
