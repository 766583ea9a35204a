import Foundation
import Testing
import TollgateStore

@Suite("Environment")
struct EnvironmentTests {
    @Test("Opening creates the directory, including missing parents, and the LMDB files")
    func createsDirectory() throws {
        let root = TemporaryDirectory()
        defer { root.remove() }
        let path = root.path + "/nested/store"
        let environment = try Environment(path: path)
        defer { environment.close() }
        #expect(FileManager.default.fileExists(atPath: path + "/data.mdb"))
        #expect(FileManager.default.fileExists(atPath: path + "/lock.mdb"))
        #expect(try permissions(of: path) == 0o700)
    }

    @Test("data.mdb and lock.mdb are created with mode 0600 by default")
    func defaultFileMode() throws {
        try withEnvironment { environment throws in
            #expect(try permissions(of: environment.path + "/data.mdb") == 0o600)
            #expect(try permissions(of: environment.path + "/lock.mdb") == 0o600)
        }
    }

    @Test("A custom file mode is applied exactly, not masked by the umask")
    func customFileMode() throws {
        // 0o660 survives only if the umask is overridden (the usual umask 022 would give 0640).
        try withEnvironment(EnvironmentOptions(fileMode: 0o660)) { environment throws in
            #expect(try permissions(of: environment.path + "/data.mdb") == 0o660)
            #expect(try permissions(of: environment.path + "/lock.mdb") == 0o660)
        }
    }

    @Test("Reopening after close keeps the data")
    func reopenKeepsData() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        do {
            let environment = try Environment(path: directory.path)
            let db = try environment.openDatabase(named: "entries")
            try environment.write { try $0.put("key", "value", in: db) }
            environment.close()
            #expect(environment.isClosed)
        }
        let reopened = try Environment(path: directory.path)
        defer { reopened.close() }
        let db = try reopened.openDatabase(named: "entries", create: false)
        #expect(try reopened.read { try $0.get("key", as: String.self, in: db) } == "value")
    }

    @Test("A closed environment throws StoreError.closed")
    func closedThrows() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let environment = try Environment(path: directory.path)
        let db = try environment.openDatabase(named: "entries")
        environment.close()
        environment.close()  // idempotent
        #expect(throws: StoreError.closed) { try environment.read { try $0.count(in: db) } }
        #expect(throws: StoreError.closed) { try environment.write { try $0.put("a", "b", in: db) } }
        #expect(throws: StoreError.closed) { try environment.info }
    }

    @Test("A read-only environment reads existing data and refuses writes")
    func readOnly() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        do {
            let writer = try Environment(path: directory.path)
            let db = try writer.openDatabase(named: "entries")
            try writer.write { try $0.put("key", "value", in: db) }
            writer.close()
        }
        let reader = try Environment(path: directory.path, options: EnvironmentOptions(readOnly: true))
        defer { reader.close() }
        let db = try reader.openDatabase(named: "entries")
        #expect(try reader.read { try $0.get("key", as: String.self, in: db) } == "value")
        #expect(throws: StoreError.readOnly) { try reader.write { try $0.put("key", "other", in: db) } }
        #expect(throws: StoreError.notFound) { try reader.openDatabase(named: "missing") }
    }

    @Test("Database handles are cached, separate, and missing ones are not created on request")
    func databases() throws {
        try withEnvironment { environment throws in
            let first = try environment.openDatabase(named: "first")
            let second = try environment.openDatabase(named: "second")
            #expect(try environment.openDatabase(named: "first") == first)
            #expect(first != second)
            try environment.write { txn throws in
                try txn.put("key", "in first", in: first)
                try txn.put("key", "in second", in: second)
            }
            #expect(try environment.read { try $0.get("key", as: String.self, in: first) } == "in first")
            #expect(try environment.read { try $0.get("key", as: String.self, in: second) } == "in second")
            #expect(throws: StoreError.notFound) { try environment.openDatabase(named: "absent", create: false) }
        }
    }

    @Test("Opening more databases than maxDatabases throws databasesFull")
    func databasesFull() throws {
        try withEnvironment(EnvironmentOptions(maxDatabases: 2)) { environment throws in
            _ = try environment.openDatabase(named: "one")
            _ = try environment.openDatabase(named: "two")
            #expect(throws: StoreError.databasesFull) { try environment.openDatabase(named: "three") }
        }
    }

    @Test("Info and stats report map size, pages, transaction ids and entries per database")
    func infoAndStats() throws {
        try withEnvironment(EnvironmentOptions(mapSize: 2 << 20)) { environment throws in
            let db = try environment.openDatabase(named: "entries")
            let other = try environment.openDatabase(named: "other")
            let before = try environment.info
            try environment.write { txn throws in
                for index in 0..<10 { try txn.put("key\(index)", "value", in: db) }
            }
            let after = try environment.info
            #expect(after.mapSize == 2 << 20)
            #expect(after.pageSize >= 4096)
            #expect(after.lastTransactionID == before.lastTransactionID + 1)
            #expect(after.usedBytes > 0 && after.usedBytes <= after.mapSize)
            #expect(try environment.stats(for: db).entries == 10)
            let all = try environment.stats()
            #expect(all["entries"]?.entries == 10)
            #expect(all["other"]?.entries == 0)
            #expect(all.count == 2)
            _ = other
        }
    }

    @Test("A compacting copy holds the same data, with the environment's file mode")
    func copy() throws {
        let target = TemporaryDirectory()
        defer { target.remove() }
        try withEnvironment { environment throws in
            let db = try environment.openDatabase(named: "entries")
            try environment.write { txn throws in
                for index in 0..<100 { try txn.put(UInt64(index), "value \(index)", in: db) }
            }
            try environment.sync()
            try environment.copy(to: target.path)
            #expect(throws: StoreError.self) { try environment.copy(to: target.path) }  // data.mdb exists
        }
        #expect(try permissions(of: target.path + "/data.mdb") == 0o600)
        let copy = try Environment(path: target.path)
        defer { copy.close() }
        let db = try copy.openDatabase(named: "entries", create: false)
        #expect(try copy.read { try $0.count(in: db) } == 100)
        #expect(try copy.read { try $0.get(UInt64(42), as: String.self, in: db) } == "value 42")
    }
}
