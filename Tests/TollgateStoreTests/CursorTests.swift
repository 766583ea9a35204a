import Testing
import TollgateStore

@Suite("Cursor")
struct CursorTests {
    /// Fills a database with `keys` (value = key) and runs `body` with it.
    private func withKeys(
        _ keys: [String], _ body: (Environment, Database) throws -> Void
    ) throws {
        try withEnvironment { environment throws in
            let db = try environment.openDatabase(named: "keys")
            try environment.write { txn throws in
                for key in keys { try txn.put(key, key, in: db) }
            }
            try body(environment, db)
        }
    }

    private let keys = ["b", "a", "ab", "abc", "b1", "c", "aa"]

    @Test("A cursor walks every key in byte order, forwards and backwards")
    func order() throws {
        try withKeys(keys) { environment, db throws in
            let sorted = keys.sorted()
            try environment.read { txn throws in
                var forward: [String] = []
                try txn.forEach(in: db) { (key: String, value: String) in
                    #expect(key == value)
                    forward.append(key)
                    return true
                }
                #expect(forward == sorted)
                let backward = try txn.entries(in: db, reverse: true).map { (entry: (key: String, value: String)) in entry.key }
                #expect(backward == sorted.reversed())
                // Step by step, including both ends.
                try txn.withCursor(in: db) { cursor throws in
                    #expect(try cursor.first()?.decodedKey(as: String.self) == "a")
                    #expect(try cursor.next()?.decodedKey(as: String.self) == "aa")
                    #expect(try cursor.previous()?.decodedKey(as: String.self) == "a")
                    #expect(try cursor.previous() == nil)
                    #expect(try cursor.last()?.decodedKey(as: String.self) == "c")
                    #expect(try cursor.next() == nil)
                    #expect(try cursor.seek(to: "ab")?.decodedValue(as: String.self) == "ab")
                    #expect(try cursor.current()?.decodedKey(as: String.self) == "ab")
                    #expect(try cursor.seek(to: "zz") == nil)
                }
            }
        }
    }

    @Test("Iteration from a key starts at the first key at or after it, or at or before it backwards")
    func range() throws {
        try withKeys(keys) { environment, db throws in
            try environment.read { txn throws in
                func from(_ start: String, reverse: Bool = false, limit: Int = .max) throws -> [String] {
                    try txn.entries(in: db, from: start, reverse: reverse, limit: limit)
                        .map { (entry: (key: String, value: String)) in entry.key }
                }
                #expect(try from("ab") == ["ab", "abc", "b", "b1", "c"])
                #expect(try from("abd") == ["b", "b1", "c"])
                #expect(try from("ab", limit: 2) == ["ab", "abc"])
                #expect(try from("d") == [])
                #expect(try from("ab", reverse: true) == ["ab", "aa", "a"])
                #expect(try from("abd", reverse: true) == ["abc", "ab", "aa", "a"])
                #expect(try from("zzz", reverse: true, limit: 1) == ["c"])
                #expect(try from("0", reverse: true) == [])
            }
        }
    }

    @Test("Prefix iteration visits exactly the keys with the prefix, in both directions")
    func prefix() throws {
        try withKeys(keys) { environment, db throws in
            try environment.read { txn throws in
                func with(_ prefix: String, reverse: Bool = false) throws -> [String] {
                    try txn.entries(in: db, prefix: prefix, reverse: reverse)
                        .map { (entry: (key: String, value: String)) in entry.key }
                }
                #expect(try with("a") == ["a", "aa", "ab", "abc"])
                #expect(try with("a", reverse: true) == ["abc", "ab", "aa", "a"])
                #expect(try with("ab") == ["ab", "abc"])
                #expect(try with("b", reverse: true) == ["b1", "b"])
                #expect(try with("c", reverse: true) == ["c"])
                #expect(try with("x") == [])
                #expect(try with("x", reverse: true) == [])
            }
        }
    }

    @Test("Backward prefix iteration handles prefixes ending in 0xFF bytes")
    func prefixAllOnes() throws {
        try withEnvironment { environment throws in
            let db = try environment.openDatabase(named: "bytes")
            let keys: [[UInt8]] = [[0x01], [0xFE, 0x01], [0xFF], [0xFF, 0x00], [0xFF, 0xFF, 0x02]]
            try environment.write { txn throws in
                for key in keys { try txn.put(key, key, in: db) }
            }
            let found = try environment.read { txn throws in
                try txn.entries(in: db, prefix: [UInt8]([0xFF]), reverse: true)
                    .map { (entry: (key: [UInt8], value: [UInt8])) in entry.key }
            }
            #expect(found == [[0xFF, 0xFF, 0x02], [0xFF, 0x00], [0xFF]])
        }
    }

    @Test("deleteCurrent removes entries while walking, and is refused in a read transaction")
    func deleteWhileWalking() throws {
        try withEnvironment { environment throws in
            let db = try environment.openDatabase(named: "numbers")
            try environment.write { txn throws in
                for number in UInt64(0)..<10 { try txn.put(number, "v", in: db) }
            }
            try environment.write { txn throws in
                try txn.withCursor(in: db) { cursor throws in
                    try cursor.forEach { entry in
                        if try entry.decodedKey(as: UInt64.self) % 2 == 0 { try cursor.deleteCurrent() }
                        return true
                    }
                }
            }
            let left = try environment.read { txn throws in
                try txn.entries(in: db).map { (entry: (key: UInt64, value: String)) in entry.key }
            }
            #expect(left == [1, 3, 5, 7, 9])
            try environment.read { txn throws in
                try txn.withCursor(in: db) { cursor throws in
                    _ = try cursor.first()
                    #expect(throws: StoreError.readOnly) { try cursor.deleteCurrent() }
                }
            }
        }
    }

    @Test("A visitor returning false stops the walk")
    func stopEarly() throws {
        try withKeys(keys) { environment, db throws in
            var seen = 0
            try environment.read { txn throws in
                try txn.forEach(in: db) { (_: String, _: String) in
                    seen += 1
                    return seen < 3
                }
            }
            #expect(seen == 3)
        }
    }
}
