import Foundation
import Testing
import TollgateStore

@Suite("StoreWriter")
struct StoreWriterTests {
    /// Occupies the writer thread until `release` is signalled, so that work submitted
    /// meanwhile queues up and is grouped.
    private func block(_ writer: StoreWriter) -> DispatchSemaphore {
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        writer.submit({ _ in
            started.signal()
            release.wait()
        }, completion: { _ in })
        started.wait()
        return release
    }

    @Test("Many submits from several threads all land", .timeLimit(.minutes(1)))
    func concurrentSubmits() throws {
        try withEnvironment { environment throws in
            let db = try environment.openDatabase(named: "entries")
            let writer = StoreWriter(environment: environment, queueLimit: 4096)
            let group = DispatchGroup()
            let failures = Locked(0)
            DispatchQueue.concurrentPerform(iterations: 4) { thread in
                for index in 0..<250 {
                    group.enter()
                    writer.submit({ txn throws in
                        try txn.put("t\(thread)-\(index)", UInt64(index), in: db)
                    }, completion: { result in
                        if case .failure = result { failures.withLock { $0 += 1 } }
                        group.leave()
                    })
                }
            }
            group.wait()
            writer.shutdown()
            #expect(failures.current == 0)
            #expect(try environment.read { try $0.count(in: db) } == 1000)
            #expect(try environment.read { try $0.get("t3-249", as: UInt64.self, in: db) } == 249)
        }
    }

    @Test("Writes queued together share one transaction", .timeLimit(.minutes(1)))
    func groupCommit() throws {
        try withEnvironment { environment throws in
            let db = try environment.openDatabase(named: "entries")
            let writer = StoreWriter(environment: environment, batchLimit: 256)
            let before = try environment.info.lastTransactionID
            let release = block(writer)
            let group = DispatchGroup()
            let writes = 200
            for index in 0..<writes {
                group.enter()
                writer.submit({ try $0.put(UInt64(index), "v", in: db) }, completion: { _ in group.leave() })
            }
            release.signal()
            group.wait()
            writer.shutdown()
            let transactions = try environment.info.lastTransactionID - before
            #expect(try environment.read { try $0.count(in: db) } == writes)
            #expect(transactions < writes)
            #expect(transactions <= 2)  // the blocker's own group, then all 200 together
        }
    }

    @Test("waitForQueuedWrites returns once what was submitted before it committed; in a completion, at once", .timeLimit(.minutes(1)))
    func waitForQueuedWrites() throws {
        try withEnvironment { environment throws in
            let db = try environment.openDatabase(named: "entries")
            let writer = StoreWriter(environment: environment)
            let release = block(writer)
            writer.submit({ try $0.put("queued", UInt64(1), in: db) }, completion: { _ in })
            #expect(try environment.read { try $0.get("queued", as: UInt64.self, in: db) } == nil)
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(50)) { release.signal() }
            writer.waitForQueuedWrites()
            #expect(try environment.read { try $0.get("queued", as: UInt64.self, in: db) } == 1)
            // On the writer thread it would wait for itself.
            let returned = DispatchSemaphore(value: 0)
            writer.submit({ _ in }, completion: { _ in
                writer.waitForQueuedWrites()
                returned.signal()
            })
            #expect(returned.wait(timeout: .now() + 10) == .success)
            writer.shutdown()
        }
    }

    @Test("A closure that throws fails alone; the rest of its group commits", .timeLimit(.minutes(1)))
    func failureIsolation() throws {
        try withEnvironment { environment throws in
            let db = try environment.openDatabase(named: "entries")
            let writer = StoreWriter(environment: environment)
            let before = try environment.info.lastTransactionID
            let release = block(writer)
            let group = DispatchGroup()
            let outcomes = Locked<[Int: Result<Int, any Error>]>([:])
            for index in 0..<10 {
                group.enter()
                writer.submit({ txn throws in
                    try txn.put("key\(index)", "v", in: db)
                    if index == 4 { throw Deliberate(tag: index) }
                    return index
                }, completion: { result in
                    outcomes.withLock { $0[index] = result }
                    group.leave()
                })
            }
            release.signal()
            group.wait()
            writer.shutdown()
            let results = outcomes.current
            #expect(results.count == 10)
            for index in 0..<10 where index != 4 {
                #expect((try? results[index]?.get()) == index)
            }
            #expect(throws: Deliberate(tag: 4)) { try results[4]?.get() }
            try environment.read { txn throws in
                #expect(try txn.count(in: db) == 9)
                #expect(try txn.get("key4", as: String.self, in: db) == nil)
            }
            #expect(try environment.info.lastTransactionID - before <= 2)
        }
    }

    @Test("The async submit returns the closure's value, or throws its error")
    func asyncSubmit() async throws {
        try await withEnvironment { environment async throws in
            let db = try environment.openDatabase(named: "entries")
            let writer = StoreWriter(environment: environment)
            let stored = try await writer.submit { txn throws in
                try txn.put("key", "value", in: db)
                return 42
            }
            #expect(stored == 42)
            await #expect(throws: StoreError.keyExists) {
                try await writer.submit { try $0.put("key", "again", in: db, flags: .noOverwrite) }
            }
            #expect(try environment.read { try $0.get("key", as: String.self, in: db) } == "value")
            writer.shutdown()
        }
    }

    @Test("A full queue refuses work with writerQueueFull; a shut-down writer with writerStopped",
          .timeLimit(.minutes(1)))
    func bounded() throws {
        try withEnvironment { environment throws in
            let db = try environment.openDatabase(named: "entries")
            let writer = StoreWriter(environment: environment, queueLimit: 2)
            let release = block(writer)
            let results = Locked<[Result<Void, any Error>]>([])
            let group = DispatchGroup()
            for index in 0..<3 {
                group.enter()
                writer.submit({ try $0.put("key\(index)", "v", in: db) }, completion: { result in
                    results.withLock { $0.append(result) }
                    group.leave()
                })
            }
            // The third was refused at once, before the writer was released.
            #expect(results.current.count == 1)
            #expect(throws: StoreError.writerQueueFull) { try results.current.first?.get() }
            release.signal()
            group.wait()
            writer.shutdown()  // waits for the queued work
            #expect(try environment.read { try $0.count(in: db) } == 2)
            let late = Locked<Result<Void, any Error>?>(nil)
            writer.submit({ try $0.put("late", "v", in: db) }, completion: { result in late.withLock { $0 = result } })
            #expect(throws: StoreError.writerStopped) { try late.current?.get() }
        }
    }

    @Test("A group that fills a small map is rerun on a bigger one, losing nothing", .timeLimit(.minutes(1)))
    func groupGrowsMap() throws {
        try withEnvironment(EnvironmentOptions(mapSize: 1 << 20)) { environment throws in
            let db = try environment.openDatabase(named: "blobs")
            let writer = StoreWriter(environment: environment)
            let release = block(writer)
            let group = DispatchGroup()
            let failures = Locked(0)
            for index in 0..<64 {  // 64 × 64 KiB = 4 MiB in one group
                group.enter()
                writer.submit({ txn throws in
                    try txn.put(UInt64(index), [UInt8](repeating: UInt8(index), count: 64 << 10), in: db)
                }, completion: { result in
                    if case .failure = result { failures.withLock { $0 += 1 } }
                    group.leave()
                })
            }
            release.signal()
            group.wait()
            writer.shutdown()
            #expect(failures.current == 0)
            #expect(try environment.read { try $0.count(in: db) } == 64)
            #expect(try environment.info.mapSize >= 4 << 20)
        }
    }
}
