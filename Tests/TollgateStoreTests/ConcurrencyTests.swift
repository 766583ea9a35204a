import Foundation
import Testing
import TollgateStore

@Suite("Concurrency")
struct ConcurrencyTests {
    @Test("Readers on other threads keep their snapshot while a writer commits, then see the new data",
          .timeLimit(.minutes(1)))
    func snapshotIsolation() throws {
        try withEnvironment { environment throws in
            let db = try environment.openDatabase(named: "entries")
            try environment.write { try $0.put("key", "old", in: db) }

            let readerCount = 3
            let started = DispatchSemaphore(value: 0)
            let committed = DispatchSemaphore(value: 0)
            let results = Locked<[(during: String?, after: String?)]>([])
            var finished: [DispatchSemaphore] = []
            for _ in 0..<readerCount {
                finished.append(onOtherThread {
                    do {
                        let during = try environment.read { txn throws in
                            started.signal()
                            committed.wait()  // the write commits while this snapshot is open
                            return try txn.get("key", as: String.self, in: db)
                        }
                        let after = try environment.read { try $0.get("key", as: String.self, in: db) }
                        results.withLock { $0.append((during, after)) }
                    } catch {
                        results.withLock { $0.append((nil, nil)) }
                    }
                })
            }
            for _ in 0..<readerCount { started.wait() }
            // The writer is not blocked by the open readers.
            try environment.write { try $0.put("key", "new", in: db) }
            for _ in 0..<readerCount { committed.signal() }
            for semaphore in finished { semaphore.wait() }

            let seen = results.current
            #expect(seen.count == readerCount)
            for result in seen {
                #expect(result.during == "old")
                #expect(result.after == "new")
            }
        }
    }

    @Test("Threads writing and reading at once lose no writes", .timeLimit(.minutes(1)))
    func concurrentWriters() throws {
        try withEnvironment { environment throws in
            let db = try environment.openDatabase(named: "counter")
            let failures = Locked(0)
            DispatchQueue.concurrentPerform(iterations: 4) { thread in
                for index in 0..<50 {
                    do {
                        try environment.write { txn throws in
                            let count = try txn.get("count", as: UInt64.self, in: db) ?? 0
                            try txn.put("count", count + 1, in: db)
                            try txn.put("t\(thread)-\(index)", "v", in: db)
                        }
                        _ = try environment.read { try $0.get("count", as: UInt64.self, in: db) }
                    } catch {
                        failures.withLock { $0 += 1 }
                    }
                }
            }
            #expect(failures.current == 0)
            #expect(try environment.read { try $0.get("count", as: UInt64.self, in: db) } == 200)
            #expect(try environment.read { try $0.count(in: db) } == 201)
        }
    }
}
