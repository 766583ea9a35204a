import CLMDB

/// A position in one database of a transaction, moving through its keys in byte order.
///
/// Obtained from `ReadTransaction.withCursor(in:_:)` and valid only inside that closure.
/// Every move returns the entry it lands on, or nil when there is none (past either end,
/// or a missing key). Stepping from a fresh cursor starts at the first (`next`) or last
/// (`previous`) key.
public final class Cursor {
    private unowned let transaction: ReadTransaction
    /// `MDB_cursor *`; nil once closed.
    private var handle: OpaquePointer?

    init(transaction: ReadTransaction, handle: OpaquePointer) {
        self.transaction = transaction
        self.handle = handle
    }

    /// Closes the cursor; later calls throw `StoreError.transactionEnded`.
    func close() {
        if let handle { mdb_cursor_close(handle) }
        handle = nil
    }

    /// Performs one `mdb_cursor_get`, with `key` as input for the seeking operations.
    private func get(_ op: MDB_cursor_op, _ key: UnsafeRawBufferPointer? = nil) throws -> CursorEntry? {
        guard let handle else { throw StoreError.transactionEnded }
        _ = try transaction.usableHandle()  // not while a nested transaction runs
        var keyVal = key.map(MDB_val.init) ?? MDB_val()
        var dataVal = MDB_val()
        let rc = mdb_cursor_get(handle, &keyVal, &dataVal, op)
        if rc == MDB_NOTFOUND { return nil }
        try transaction.check(rc)
        return CursorEntry(key: keyVal.bytes, value: dataVal.bytes)
    }

    /// Moves to the first (smallest) key.
    public func first() throws -> CursorEntry? { try get(MDB_FIRST) }
    /// Moves to the last (largest) key.
    public func last() throws -> CursorEntry? { try get(MDB_LAST) }
    /// Moves to the next key.
    public func next() throws -> CursorEntry? { try get(MDB_NEXT) }
    /// Moves to the previous key.
    public func previous() throws -> CursorEntry? { try get(MDB_PREV) }
    /// The entry at the current position.
    public func current() throws -> CursorEntry? { try get(MDB_GET_CURRENT) }

    /// Moves to `key` exactly; nil when it is absent.
    public func seek<K: StoreCodable>(to key: K) throws -> CursorEntry? {
        try key.withStoreBytes { try get(MDB_SET_KEY, $0) }
    }

    /// Moves to the first key greater than or equal to `key` (`MDB_SET_RANGE`).
    public func seek<K: StoreCodable>(atLeast key: K) throws -> CursorEntry? {
        try key.withStoreBytes { try get(MDB_SET_RANGE, $0) }
    }

    /// Moves to the last key less than or equal to `key`.
    public func seek<K: StoreCodable>(atMost key: K) throws -> CursorEntry? {
        try key.withStoreBytes { target in
            guard let entry = try get(MDB_SET_RANGE, target) else { return try last() }
            return entry.key.elementsEqual(target) ? entry : try previous()
        }
    }

    /// Deletes the entry at the current position; `next()` then returns the entry after it.
    ///
    /// - Throws: `StoreError.readOnly` in a read-only transaction.
    public func deleteCurrent() throws {
        guard let handle else { throw StoreError.transactionEnded }
        guard transaction is WriteTransaction else { throw StoreError.readOnly }
        _ = try transaction.usableHandle()
        try transaction.check(mdb_cursor_del(handle, 0))
    }

    /// Visits every entry in key order (descending when `reverse`) until `body` returns false.
    public func forEach(reverse: Bool = false, _ body: (CursorEntry) throws -> Bool) throws {
        try walk(from: reverse ? last() : first(), reverse: reverse, while: { _ in true }, body)
    }

    /// Visits entries from `key` onwards (from the first key ≥ `key`; with `reverse`, from
    /// the last key ≤ `key` downwards) until `body` returns false.
    public func forEach<K: StoreCodable>(
        from key: K, reverse: Bool = false, _ body: (CursorEntry) throws -> Bool
    ) throws {
        try walk(from: reverse ? seek(atMost: key) : seek(atLeast: key), reverse: reverse, while: { _ in true }, body)
    }

    /// Visits the entries whose key starts with the bytes of `prefix`, in key order
    /// (descending when `reverse`), until `body` returns false.
    public func forEach<K: StoreCodable>(
        prefix: K, reverse: Bool = false, _ body: (CursorEntry) throws -> Bool
    ) throws {
        let prefix = prefix.storeBytes
        guard !prefix.isEmpty else { return try forEach(reverse: reverse, body) }  // LMDB rejects empty keys
        var start: CursorEntry?
        if !reverse {
            start = try seek(atLeast: prefix)
        } else if let successor = Self.successor(of: prefix) {
            // The last key with the prefix is just before the first key past all of them.
            start = try seek(atLeast: successor) != nil ? previous() : last()
        } else {
            start = try last()  // the prefix is all 0xFF: nothing sorts after its keys
        }
        try walk(from: start, reverse: reverse, while: { $0.keyHasPrefix(prefix) }, body)
    }

    private func walk(
        from start: CursorEntry?, reverse: Bool, while inRange: (CursorEntry) -> Bool,
        _ body: (CursorEntry) throws -> Bool
    ) throws {
        var entry = start
        while let current = entry, inRange(current) {
            guard try body(current) else { return }
            entry = try reverse ? previous() : next()
        }
    }

    /// The smallest byte string greater than every string starting with `prefix`, if any.
    static func successor(of prefix: [UInt8]) -> [UInt8]? {
        var bytes = prefix
        while let last = bytes.last {
            if last < 0xFF {
                bytes[bytes.count - 1] = last + 1
                return bytes
            }
            bytes.removeLast()
        }
        return nil
    }
}

/// Cursors belong to their transaction's closure; they must not be shared.
@available(*, unavailable)
extension Cursor: Sendable {}
