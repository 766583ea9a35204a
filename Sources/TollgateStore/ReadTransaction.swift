import CLMDB

/// A transaction that can read: the argument of `Environment.read`, and the base of
/// `WriteTransaction`.
///
/// Valid only inside the closure it was given to, on that closure's thread; afterwards
/// every call throws `StoreError.transactionEnded`. Pointers handed out by `withValue` and
/// cursors point into the map and are valid only as documented there.
public class ReadTransaction {
    /// The environment this transaction belongs to.
    public let environment: Environment
    /// `MDB_txn *`; nil once the transaction has ended.
    private(set) var handle: OpaquePointer?
    /// True while a nested transaction runs: LMDB forbids using the parent meanwhile.
    var childActive = false

    init(environment: Environment, handle: OpaquePointer) {
        self.environment = environment
        self.handle = handle
    }

    /// The LMDB handle, if this transaction may be used now.
    func usableHandle() throws -> OpaquePointer {
        guard let handle, !childActive else { throw StoreError.transactionEnded }
        return handle
    }

    /// The LMDB handle of `database`, after checking it belongs to this environment.
    func dbi(_ database: Database) throws -> MDB_dbi {
        guard database.environmentID == ObjectIdentifier(environment) else {
            throw StoreError.invalidDatabase.with(message: "\(database) belongs to another environment")
        }
        return database.dbi
    }

    /// Throws the error for a failed LMDB call made in this transaction.
    func check(_ returnCode: Int32) throws {
        guard returnCode != MDB_SUCCESS else { return }
        noteFailure(returnCode)
        throw StoreError.lmdb(returnCode)
    }

    /// Hook for write transactions, which must remember that the map filled up.
    func noteFailure(_ returnCode: Int32) {}

    /// Ends the transaction, discarding any changes. Idempotent.
    func abort() {
        if let handle { mdb_txn_abort(handle) }
        handle = nil
    }

    /// Commits and ends the transaction, returning LMDB's result.
    func commit() -> Int32 {
        guard let handle else { return MDB_BAD_TXN }
        self.handle = nil
        return mdb_txn_commit(handle)  // frees the transaction even when it fails
    }

    /// The transaction's id: for a read, the id of the snapshot's last committed write.
    public var id: Int {
        get throws { mdb_txn_id(try usableHandle()) }
    }

    /// The value stored under `key`, decoded as `V`, or nil when the key is absent.
    ///
    /// - Throws: `StoreError.invalidValue` if the bytes do not decode; `StoreError.badValueSize`
    ///   for an empty or too-long key.
    @inlinable
    public final func get<K: StoreCodable, V: StoreCodable>(
        _ key: K, as type: V.Type = V.self, in database: Database
    ) throws -> V? {
        try withValue(forKey: key, in: database) { try V(storeBytes: $0) }
    }

    /// Calls `body` with the bytes stored under `key`, without copying them; nil when absent.
    ///
    /// The buffer points into the map: it is valid only during `body`, which must not write.
    ///
    /// Final and inlinable so that callers in other modules get it specialized for their key and
    /// result types (a class method is otherwise called through the class's table, unspecialized):
    /// unspecialized, each call looked up the generic metadata of its closure's types (two calls
    /// per cache hit, ~2 % of a hit's CPU).
    @inlinable
    public final func withValue<K: StoreCodable, R>(
        forKey key: K, in database: Database, _ body: (UnsafeRawBufferPointer) throws -> R
    ) throws -> R? {
        try key.withStoreBytes { try withValue(forKeyBytes: $0, in: database, body) }
    }

    /// ``withValue(forKey:in:_:)`` for a key given as its bytes (valid during the call), for a
    /// caller that builds a key in place rather than in an array.
    @inlinable
    public final func withValue<R>(
        forKeyBytes key: UnsafeRawBufferPointer, in database: Database, _ body: (UnsafeRawBufferPointer) throws -> R
    ) throws -> R? {
        guard let value = try valueBytes(forKey: key, in: database) else { return nil }
        return try body(value)
    }

    /// The bytes stored under `key` (pointing into the map), or nil: the non-generic part of
    /// ``withValue(forKeyBytes:in:_:)``, which is inlined into its callers.
    @usableFromInline
    final func valueBytes(forKey key: UnsafeRawBufferPointer, in database: Database) throws -> UnsafeRawBufferPointer? {
        let txn = try usableHandle()
        let dbi = try dbi(database)
        var keyValue = MDB_val(key)
        var data = MDB_val()
        let rc = mdb_get(txn, dbi, &keyValue, &data)
        if rc == MDB_NOTFOUND { return nil }
        try check(rc)
        return data.bytes
    }

    /// True when `key` has a value in `database`.
    @inlinable
    public final func contains<K: StoreCodable>(_ key: K, in database: Database) throws -> Bool {
        try withValue(forKey: key, in: database) { _ in true } ?? false
    }

    /// The number of entries in `database`, as of this transaction.
    public func count(in database: Database) throws -> Int {
        try stats(for: database).entries
    }

    /// The statistics of `database`, as of this transaction.
    public func stats(for database: Database) throws -> DatabaseStats {
        let txn = try usableHandle()
        var stat = MDB_stat()
        try check(mdb_stat(txn, try dbi(database), &stat))
        return DatabaseStats(stat)
    }

    /// Calls `body` with a cursor over `database`, closed when `body` returns.
    /// The cursor (and any entry it returned) must not be used after that.
    public final func withCursor<R>(in database: Database, _ body: (Cursor) throws -> R) throws -> R {
        let txn = try usableHandle()
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(txn, try dbi(database), &cursor))
        let wrapped = Cursor(transaction: self, handle: cursor!)
        defer { wrapped.close() }
        return try body(wrapped)
    }
}

/// Transactions are bound to their closure and thread; they must not be shared.
@available(*, unavailable)
extension ReadTransaction: Sendable {}
