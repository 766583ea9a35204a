import Foundation
import Testing
import TollgateStore

@Suite("Map growth")
struct MapGrowthTests {
    private static let mebibyte = 1 << 20

    private func value(_ index: Int, size: Int) -> [UInt8] {
        [UInt8](repeating: UInt8(truncatingIfNeeded: index), count: size)
    }

    @Test("A 1 MiB map grows to hold 8+ MiB written across many transactions, keeping all data",
          .timeLimit(.minutes(1)))
    func growsAcrossTransactions() throws {
        try withEnvironment(EnvironmentOptions(mapSize: Self.mebibyte)) { environment throws in
            let db = try environment.openDatabase(named: "blobs")
            for index in 0..<72 {  // 72 × 128 KiB = 9 MiB
                try environment.write { try $0.put(UInt64(index), value(index, size: 128 << 10), in: db) }
            }
            #expect(try environment.info.mapSize > 8 * Self.mebibyte)
            try environment.read { txn throws in
                #expect(try txn.count(in: db) == 72)
                for index in 0..<72 {
                    #expect(try txn.get(UInt64(index), as: [UInt8].self, in: db) == value(index, size: 128 << 10))
                }
            }
        }
    }

    @Test("One transaction bigger than the map is rerun until the map fits it", .timeLimit(.minutes(1)))
    func growsWithinOneTransaction() throws {
        try withEnvironment(EnvironmentOptions(mapSize: Self.mebibyte)) { environment throws in
            let db = try environment.openDatabase(named: "blobs")
            let runs = Locked(0)
            try environment.write { txn throws in
                runs.withLock { $0 += 1 }
                for index in 0..<40 {  // 40 × 256 KiB = 10 MiB in one commit
                    try txn.put(UInt64(index), value(index, size: 256 << 10), in: db)
                }
            }
            #expect(runs.current > 1)  // the closure was rerun after growing
            #expect(try environment.info.mapSize >= 10 * Self.mebibyte)
            try environment.read { txn throws in
                #expect(try txn.count(in: db) == 40)
                #expect(try txn.get(UInt64(39), as: [UInt8].self, in: db) == value(39, size: 256 << 10))
            }
        }
    }

    @Test("Growth stops at maxMapSize with mapFull, and earlier data survives")
    func stopsAtLimit() throws {
        let options = EnvironmentOptions(mapSize: Self.mebibyte, maxMapSize: 2 * Self.mebibyte)
        try withEnvironment(options) { environment throws in
            let db = try environment.openDatabase(named: "blobs")
            try environment.write { try $0.put("small", "kept", in: db) }
            #expect(throws: StoreError.mapFull) {
                try environment.write { try $0.put("big", value(1, size: 4 * Self.mebibyte), in: db) }
            }
            #expect(try environment.info.mapSize == 2 * Self.mebibyte)
            #expect(try environment.read { try $0.get("small", as: String.self, in: db) } == "kept")
        }
    }

    @Test("Growth waits for a reader holding map pointers, which stay valid", .timeLimit(.minutes(1)))
    func growthWaitsForReaders() throws {
        try withEnvironment(EnvironmentOptions(mapSize: Self.mebibyte)) { environment throws in
            let db = try environment.openDatabase(named: "blobs")
            let original = value(7, size: 64 << 10)
            try environment.write { try $0.put("held", original, in: db) }
            let holding = DispatchSemaphore(value: 0)
            let intact = Locked<Bool?>(nil)
            let done = onOtherThread {
                _ = try? environment.read { txn throws in
                    try txn.withValue(forKey: "held", in: db) { buffer in
                        holding.signal()
                        Thread.sleep(forTimeInterval: 0.3)  // the writer wants to remap meanwhile
                        intact.withLock { $0 = buffer.elementsEqual(original) }
                    }
                }
            }
            holding.wait()
            try environment.write { txn throws in
                for index in 0..<16 { try txn.put(UInt64(index), value(index, size: 256 << 10), in: db) }
            }
            // The write needed a remap, which had to wait until the reader was done.
            #expect(intact.current != nil)
            done.wait()
            #expect(intact.current == true)
            #expect(try environment.info.mapSize >= 4 * Self.mebibyte)
        }
    }
}
