extension ReadTransaction {
    /// Visits the entries of `database` in key order, decoded, until `body` returns false.
    ///
    /// - Parameters:
    ///   - start: begin at the first key ≥ `start` (with `reverse`, the last key ≤ `start`);
    ///     nil for the first (last) key.
    ///   - reverse: walk in descending key order.
    public func forEach<K: StoreCodable, V: StoreCodable>(
        in database: Database, from start: K? = nil, reverse: Bool = false,
        _ body: (K, V) throws -> Bool
    ) throws {
        try withCursor(in: database) { cursor in
            let visit = { (entry: CursorEntry) in try body(entry.decodedKey(), entry.decodedValue()) }
            if let start {
                try cursor.forEach(from: start, reverse: reverse, visit)
            } else {
                try cursor.forEach(reverse: reverse, visit)
            }
        }
    }

    /// Visits the entries of `database` whose key starts with the bytes of `prefix`,
    /// decoded, in key order (descending when `reverse`), until `body` returns false.
    public func forEach<K: StoreCodable, V: StoreCodable>(
        in database: Database, prefix: K, reverse: Bool = false,
        _ body: (K, V) throws -> Bool
    ) throws {
        try withCursor(in: database) { cursor in
            try cursor.forEach(prefix: prefix, reverse: reverse) { entry in
                try body(entry.decodedKey(), entry.decodedValue())
            }
        }
    }

    /// Up to `limit` decoded entries of `database` in key order; see
    /// `forEach(in:from:reverse:_:)` for `start` and `reverse`.
    public func entries<K: StoreCodable, V: StoreCodable>(
        in database: Database, from start: K? = nil, reverse: Bool = false, limit: Int = .max
    ) throws -> [(key: K, value: V)] {
        var result: [(key: K, value: V)] = []
        guard limit > 0 else { return result }
        try forEach(in: database, from: start, reverse: reverse) { (key: K, value: V) in
            result.append((key, value))
            return result.count < limit
        }
        return result
    }

    /// Up to `limit` decoded entries of `database` whose key starts with `prefix`.
    public func entries<K: StoreCodable, V: StoreCodable>(
        in database: Database, prefix: K, reverse: Bool = false, limit: Int = .max
    ) throws -> [(key: K, value: V)] {
        var result: [(key: K, value: V)] = []
        guard limit > 0 else { return result }
        try forEach(in: database, prefix: prefix, reverse: reverse) { (key: K, value: V) in
            result.append((key, value))
            return result.count < limit
        }
        return result
    }
}
