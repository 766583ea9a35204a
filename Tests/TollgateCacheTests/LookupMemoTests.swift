import Foundation
import NIOCore
import Testing
import TollgateHTTP
import TollgateStore

@testable import TollgateCache

@Suite("Lookups are answered from memory only while no write has committed", .timeLimit(.minutes(1)))
struct LookupMemoTests {
    let url = "https://example.com/memo"

    private func lookup(_ store: CacheStore, _ url: String) throws -> CacheEntry? {
        let head = request([], url: url)
        return try store.lookup(CacheKey(request: head)!, requestHeaders: head.headerFields)
    }

    /// Where an inline body's bytes are: equal for two entries sharing one buffer.
    private func address(of entry: CacheEntry) -> UnsafeRawPointer? {
        guard case .inline(let body) = entry.body else { return nil }
        return body.withUnsafeReadableBytes { UnsafeRawPointer($0.baseAddress) }
    }

    @Test("Repeated lookups share one inline body (larger than the decoded records keep) until a commit")
    func sharedUntilCommit() throws {
        try withStore { store, _ in
            let body = pattern(16 << 10)
            try put(store, url, body: body)
            let first = try #require(try lookup(store, url))
            let second = try #require(try lookup(store, url))
            #expect(address(of: first) != nil)
            #expect(address(of: first) == address(of: second))
            #expect(store.lookupMemo.count == 1)

            // Any commit, here another key stored, means a read from the newer snapshot.
            try put(store, url + "/other", body: pattern(10))
            let third = try #require(try lookup(store, url))
            #expect(address(of: third) != address(of: first))
            #expect(try bytes(of: third) == body)
            #expect(try store.statistics().hits == 3)
        }
    }

    @Test("The store's own access batch (last-access times only) does not send lookups back to LMDB")
    func accessBatchKeepsMemo() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var settings = options(directory)
        settings.accessBatchSize = 1  // every hit's access is written at once, by the writer thread
        let store = try CacheStore(options: settings)
        defer { store.close() }
        try put(store, url, body: pattern(16 << 10))
        let before = try store.environment.lastCommittedTransactionID
        let first = try #require(try lookup(store, url))
        #expect(store.lookupMemo.currentSnapshot == before)
        // The batch of that hit commits on the writer thread; the memo moves along with it.
        let deadline = Date().addingTimeInterval(10)
        while store.lookupMemo.currentSnapshot == before, Date() < deadline { usleep(2_000) }
        #expect(try store.environment.lastCommittedTransactionID == before + 1)
        #expect(store.lookupMemo.currentSnapshot == before + 1)
        let second = try #require(try lookup(store, url))
        #expect(address(of: second) == address(of: first))
    }

    @Test("A commit made outside the store's own paths (another writer) is seen by the next lookup")
    func foreignCommit() throws {
        try withStore { store, _ in
            try put(store, url, body: pattern(100))
            #expect(try lookup(store, url) != nil)
            let key = CacheKey(request: request([], url: url))!
            let db = store.db
            // What another process's removal looks like to this one: the key's ids gone.
            try store.environment.write { txn in _ = try txn.delete(key.storageKey, in: db.entries) }
            #expect(try lookup(store, url) == nil)
        }
    }

    @Test("Replacing, updating and purging are seen at once")
    func changesSeen() throws {
        try withStore { store, _ in
            try put(store, url, body: pattern(100), responseLines: ["Cache-Control: max-age=60", "X-V: 1"])
            #expect(try lookup(store, url)?.response.headerFields["X-V"] == "1")
            try put(store, url, body: pattern(200), responseLines: ["Cache-Control: max-age=60", "X-V: 2"])
            let replaced = try #require(try lookup(store, url))
            #expect(replaced.response.headerFields["X-V"] == "2")
            #expect(try bytes(of: replaced) == pattern(200))
            _ = try store.remove(key: CacheKey(request: request([], url: url))!)
            #expect(try lookup(store, url) == nil)
            // A miss is remembered too, and a store after it is seen.
            #expect(try lookup(store, url) == nil)
            try put(store, url, body: pattern(300))
            #expect(try lookup(store, url).map { try bytes(of: $0) } == pattern(300))
        }
    }

    @Test("A read from an older snapshot is not kept; a newer one starts the memo anew")
    func snapshots() {
        let memo = LookupMemo()
        let key = CacheKey(request: request([], url: url))!
        let other = CacheKey(request: request([], url: url + "/2"))!
        memo.remember([], of: key, at: 5)
        #expect(memo.variants(of: key, at: 5)?.isEmpty == true)
        #expect(memo.variants(of: key, at: 6) == nil)
        memo.remember([], of: other, at: 4)
        #expect(memo.variants(of: other, at: 5) == nil)
        memo.remember([], of: other, at: 7)
        #expect(memo.variants(of: other, at: 7) != nil)
        #expect(memo.variants(of: key, at: 7) == nil)
        #expect(memo.count == 1)
    }

    @Test("Bounded by keys and by inline body bytes")
    func bounded() {
        let memo = LookupMemo()
        for index in 0..<LookupMemo.capacity {
            memo.remember([], of: CacheKey(request: request([], url: "\(url)/\(index)"))!, at: 1)
        }
        #expect(memo.count == LookupMemo.capacity)
        memo.remember([], of: CacheKey(request: request([], url: url))!, at: 1)
        #expect(memo.count == 1)

        let half = LookupMemo.bodyByteLimit / 2 + 1
        func entry(_ size: Int) -> CacheEntry {
            CacheEntry(
                id: CacheEntryID(rawValue: 1),
                response: stored([]),
                body: .inline(ByteBuffer(repeating: 1, count: size))
            )
        }
        memo.remember([entry(half)], of: CacheKey(request: request([], url: url + "/a"))!, at: 1)
        #expect(memo.count == 2)
        memo.remember([entry(half)], of: CacheKey(request: request([], url: url + "/b"))!, at: 1)
        #expect(memo.count == 1)
        memo.remember([entry(LookupMemo.bodyByteLimit + 1)], of: CacheKey(request: request([], url: url + "/c"))!, at: 1)
        #expect(memo.variants(of: CacheKey(request: request([], url: url + "/c"))!, at: 1) == nil)
    }
}
