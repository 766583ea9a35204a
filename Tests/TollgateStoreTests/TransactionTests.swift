import Foundation
import Testing
import TollgateStore

@Suite("Transactions")
struct TransactionTests {
    @Test("A missing key reads as nil, and withValue does not call its closure")
    func missingKey() throws {
        try withEnvironment { environment throws in
            let db = try environment.openDatabase(named: "entries")
            try environment.read { txn throws in
                #expect(try txn.get("absent", as: String.self, in: db) == nil)
                #expect(try txn.contains("absent", in: db) == false)
                let called = try txn.withValue(forKey: "absent", in: db) { _ in true }
                #expect(called == nil)
            }
        }
    }

    @Test("withValue hands out the stored bytes in place")
    func withValue() throws {
        try withEnvironment { environment throws in
            let db = try environment.openDatabase(named: "entries")
            try environment.write { try $0.put("key", [UInt8]([1, 2, 3, 4]), in: db) }
            let sum = try environment.read { txn throws in
                try txn.withValue(forKey: "key", in: db) { buffer in buffer.reduce(0) { $0 + Int($1) } }
            }
            #expect(sum == 10)
        }
    }

    @Test("put with noOverwrite throws keyExists, with LMDB's code and message, and keeps the old value")
    func noOverwrite() throws {
        try withEnvironment { environment throws in
            let db = try environment.openDatabase(named: "entries")
            try environment.write { try $0.put("key", "first", in: db) }
            let error = #expect(throws: StoreError.keyExists) {
                try environment.write { try $0.put("key", "second", in: db, flags: .noOverwrite) }
            }
            #expect(error?.returnCode == -30799)  // MDB_KEYEXIST
            #expect(error?.message.contains("MDB_KEYEXIST") == true)
            #expect(try environment.read { try $0.get("key", as: String.self, in: db) } == "first")
            // Without the flag the value is replaced.
            try environment.write { try $0.put("key", "second", in: db) }
            #expect(try environment.read { try $0.get("key", as: String.self, in: db) } == "second")
        }
    }

    @Test("delete removes a key and reports whether it was there")
    func delete() throws {
        try withEnvironment { environment throws in
            let db = try environment.openDatabase(named: "entries")
            try environment.write { try $0.put("key", "value", in: db) }
            #expect(try environment.write { try $0.delete("key", in: db) } == true)
            #expect(try environment.write { try $0.delete("key", in: db) } == false)
            #expect(try environment.read { try $0.get("key", as: String.self, in: db) } == nil)
        }
    }

    @Test("A write closure that throws commits nothing")
    func abortOnThrow() throws {
        try withEnvironment { environment throws in
            let db = try environment.openDatabase(named: "entries")
            let before = try environment.info.lastTransactionID
            #expect(throws: Deliberate()) {
                try environment.write { txn throws in
                    try txn.put("a", "1", in: db)
                    try txn.put("b", "2", in: db)
                    throw Deliberate()
                }
            }
            #expect(try environment.read { try $0.count(in: db) } == 0)
            #expect(try environment.info.lastTransactionID == before)
        }
    }

    @Test("put reserving fills the value in place")
    func putReserving() throws {
        try withEnvironment { environment throws in
            let db = try environment.openDatabase(named: "entries")
            try environment.write { txn throws in
                try txn.put("key", reservingCount: 5, in: db) { buffer in
                    buffer.copyBytes(from: Array("hello".utf8))
                }
            }
            #expect(try environment.read { try $0.get("key", as: String.self, in: db) } == "hello")
        }
    }

    @Test("count, clear and drop")
    func countClearDrop() throws {
        try withEnvironment { environment throws in
            var db = try environment.openDatabase(named: "entries")
            try environment.write { txn throws in
                for index in 0..<5 { try txn.put("key\(index)", "v", in: db) }
            }
            #expect(try environment.read { try $0.count(in: db) } == 5)
            try environment.write { try $0.clear(db) }
            #expect(try environment.read { try $0.count(in: db) } == 0)
            try environment.write { try $0.put("again", "v", in: db) }
            try environment.write { try $0.drop(db) }
            #expect(throws: StoreError.notFound) { try environment.openDatabase(named: "entries", create: false) }
            db = try environment.openDatabase(named: "entries")
            #expect(try environment.read { try $0.count(in: db) } == 0)
        }
    }

    @Test("Empty keys are rejected with badValueSize")
    func emptyKey() throws {
        try withEnvironment { environment throws in
            let db = try environment.openDatabase(named: "entries")
            #expect(throws: StoreError.badValueSize) { try environment.write { try $0.put("", "v", in: db) } }
        }
    }

    @Test("A transaction or cursor used after its closure throws transactionEnded")
    func escapedTransaction() throws {
        try withEnvironment { environment throws in
            let db = try environment.openDatabase(named: "entries")
            let escaped = try environment.read { $0 }
            #expect(throws: StoreError.transactionEnded) { try escaped.get("key", as: String.self, in: db) }
            let escapedWrite = try environment.write { $0 }
            #expect(throws: StoreError.transactionEnded) { try escapedWrite.put("key", "v", in: db) }
            let cursor = try environment.read { try $0.withCursor(in: db) { $0 } }
            #expect(throws: StoreError.transactionEnded) { try cursor.first() }
        }
    }

    @Test("Starting a write inside a transaction on the same thread throws instead of deadlocking")
    func nestedWrite() throws {
        try withEnvironment { environment throws in
            let db = try environment.openDatabase(named: "entries")
            try environment.write { _ throws in
                #expect(throws: StoreError.nestedTransaction) { try environment.write { _ in } }
                #expect(throws: StoreError.nestedTransaction) { try environment.openDatabase(named: "new") }
                // A read inside a write is fine and sees the committed state.
                #expect(try environment.read { try $0.count(in: db) } == 0)
            }
            try environment.read { _ throws in
                #expect(throws: StoreError.nestedTransaction) { try environment.write { _ in } }
                #expect(try environment.read { try $0.count(in: db) } == 0)  // read inside read
            }
        }
    }

    @Test("A nested transaction that throws rolls back alone; the parent still commits")
    func nestedTransaction() throws {
        try withEnvironment { environment throws in
            let db = try environment.openDatabase(named: "entries")
            try environment.write { txn throws in
                try txn.put("parent", "kept", in: db)
                let parentUse = Locked<(any Error)?>(nil)
                #expect(throws: Deliberate()) {
                    try txn.withNestedTransaction { child in
                        try child.put("child", "dropped", in: db)
                        // The parent is off limits while its child runs.
                        do { try txn.put("x", "y", in: db) } catch { parentUse.withLock { $0 = error } }
                        throw Deliberate()
                    }
                }
                #expect(parentUse.current as? StoreError == .transactionEnded)
                try txn.withNestedTransaction { try $0.put("second child", "kept", in: db) }
            }
            try environment.read { txn throws in
                #expect(try txn.get("parent", as: String.self, in: db) == "kept")
                #expect(try txn.get("child", as: String.self, in: db) == nil)
                #expect(try txn.get("second child", as: String.self, in: db) == "kept")
                #expect(try txn.get("x", as: String.self, in: db) == nil)
            }
        }
    }
}
