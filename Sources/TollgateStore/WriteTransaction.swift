import CLMDB

/// Set when any transaction in a write's tree hits `MDB_MAP_FULL`, which poisons the whole
/// tree: the top-level write is then aborted, the map grown and the work run again.
final class GrowthFlag {
    var needed = false
}

/// A transaction that can read and write: the argument of `Environment.write` and of
/// `StoreWriter` work. Valid only inside its closure, like `ReadTransaction`.
///
/// Values read through it (`withValue`, cursor entries) may move after any write in it.
public final class WriteTransaction: ReadTransaction {
    let growth: GrowthFlag

    init(environment: Environment, handle: OpaquePointer, growth: GrowthFlag) {
        self.growth = growth
        super.init(environment: environment, handle: handle)
    }

    /// True once an operation found the map full: the write must be redone after growing.
    var needsGrowth: Bool { growth.needed }

    override func noteFailure(_ returnCode: Int32) {
        if returnCode == MDB_MAP_FULL { growth.needed = true }
    }

    /// Stores `value` under `key`, replacing any value unless `flags` has `.noOverwrite`.
    ///
    /// - Throws: `StoreError.keyExists` with `.noOverwrite` (or `.append` out of order);
    ///   `StoreError.badValueSize` for an empty key or one over 511 bytes.
    public func put<K: StoreCodable, V: StoreCodable>(
        _ key: K, _ value: V, in database: Database, flags: PutFlags = []
    ) throws {
        let txn = try usableHandle()
        let dbi = try dbi(database)
        let rc = key.withMDBVal { keyVal in
            value.withMDBVal { dataVal in mdb_put(txn, dbi, &keyVal, &dataVal, flags.rawValue) }
        }
        try check(rc)
    }

    /// Reserves `count` bytes under `key` and lets `fill` write them in place, saving a copy
    /// for large values (`MDB_RESERVE`). The buffer is valid only during `fill`.
    ///
    /// If `fill` throws, the key holds unspecified bytes: let the error abort the transaction.
    public func put<K: StoreCodable>(
        _ key: K, reservingCount count: Int, in database: Database, flags: PutFlags = [],
        _ fill: (UnsafeMutableRawBufferPointer) throws -> Void
    ) throws {
        let txn = try usableHandle()
        let dbi = try dbi(database)
        var dataVal = MDB_val(mv_size: count, mv_data: nil)
        let rc = key.withMDBVal { mdb_put(txn, dbi, &$0, &dataVal, flags.rawValue | UInt32(MDB_RESERVE)) }
        try check(rc)
        try fill(UnsafeMutableRawBufferPointer(start: dataVal.mv_data, count: count))
    }

    /// Removes `key` from `database`; returns false when it was not there.
    @discardableResult
    public func delete<K: StoreCodable>(_ key: K, in database: Database) throws -> Bool {
        let txn = try usableHandle()
        let dbi = try dbi(database)
        let rc = key.withMDBVal { mdb_del(txn, dbi, &$0, nil) }
        if rc == MDB_NOTFOUND { return false }
        try check(rc)
        return true
    }

    /// Removes every entry of `database`, keeping the database (and its handle).
    public func clear(_ database: Database) throws {
        try check(mdb_drop(try usableHandle(), try dbi(database), 0))
    }

    /// Deletes `database` from the environment when this transaction commits.
    ///
    /// LMDB closes the handle at once, even if the transaction later aborts: no other
    /// thread may be using it, and it must be opened again (which recreates it if the
    /// deletion committed) before further use.
    public func drop(_ database: Database) throws {
        try check(mdb_drop(try usableHandle(), try dbi(database), 1))
        environment.forgetDatabase(named: database.name)
    }

    /// Runs `body` in a nested transaction: its changes join this one if it returns, and
    /// are rolled back alone if it throws, leaving this transaction usable.
    ///
    /// This transaction must not be used while `body` runs (it throws `transactionEnded`).
    public func withNestedTransaction<T>(_ body: (WriteTransaction) throws -> T) throws -> T {
        let parent = try usableHandle()
        guard let env = environment.handle else { throw StoreError.closed }
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, parent, 0, &txn))
        let child = WriteTransaction(environment: environment, handle: txn!, growth: growth)
        childActive = true
        defer { childActive = false }
        let result: T
        do {
            result = try body(child)
        } catch {
            child.abort()
            throw error
        }
        if growth.needed {  // the child caught MDB_MAP_FULL itself; the tree is poisoned anyway
            child.abort()
            throw StoreError.mapFull
        }
        try check(child.commit())
        return result
    }

    /// Opens (or creates) a named database in this transaction.
    func openDatabaseHandle(named name: String, create: Bool) throws -> Database {
        var dbi = MDB_dbi()
        try check(mdb_dbi_open(try usableHandle(), name, create ? UInt32(MDB_CREATE) : 0, &dbi))
        return Database(name: name, dbi: dbi, environmentID: ObjectIdentifier(environment))
    }
}
