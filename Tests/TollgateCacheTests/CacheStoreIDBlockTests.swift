import Foundation
import Testing
import TollgateCache
import TollgateHTTP
import TollgateStore

/// Ids unique to each opening of a store, so that processes sharing it never file two responses
/// under one id (CacheSafetyTests has two proxies on one cache).
@Suite("CacheStore ids: a block for each opening", .timeLimit(.minutes(1)))
struct CacheStoreIDBlockTests {
    /// Stores small bodies for `/a` and `/b` in a store of its own, calls `beforeClosing`, closes it.
    private func storeAAndB(in directory: TemporaryDirectory, beforeClosing: (CacheStore) throws -> Void = { _ in }) throws {
        let store = try CacheStore(options: options(directory))
        defer { store.close() }
        try put(store, "https://example.com/a", body: Array("body of a".utf8))
        try put(store, "https://example.com/b", body: Array("body of b".utf8))
        try beforeClosing(store)
    }

    @Test("Each opening takes the next block of ids; what earlier ones stored stays theirs")
    func blockPerOpening() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var ids: [CacheEntryID] = []
        for (index, url) in ["https://example.com/1", "https://example.com/2", "https://example.com/3"].enumerated() {
            let store = try CacheStore(options: options(directory))
            ids.append(try put(store, url, body: pattern(100_000, seed: UInt8(index))))
            store.close()
        }
        #expect(ids.map { $0.rawValue >> 40 } == [1, 2, 3])
        #expect(ids.allSatisfy { $0.rawValue & 0xFF_FFFF_FFFF == 1 })
        #expect(Set(bodyFiles(directory)).count == 3)
        let store = try CacheStore(options: options(directory))
        defer { store.close() }
        for (index, url) in ["https://example.com/1", "https://example.com/2", "https://example.com/3"].enumerated() {
            let head = request(url: url)
            let entry = try #require(try store.lookup(CacheKey(request: head)!, requestHeaders: head.headerFields))
            #expect(entry.id == ids[index])
            #expect(try bytes(of: entry) == pattern(100_000, seed: UInt8(index)))
        }
        #expect(try store.leastRecentlyUsed() == ids)
    }

    @Test("A record found under another key's entry is never served for it")
    func recordOfAnotherKey() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        try storeAAndB(in: directory)
        // Swap the two records behind the store's back, as an id collision did.
        try changeVariants(in: directory) { txn, variants, records in
            try #require(records.count == 2)
            try txn.put(records[0].key, records[1].value, in: variants)
            try txn.put(records[1].key, records[0].value, in: variants)
        }
        let store = try CacheStore(options: options(directory))
        defer { store.close() }
        for url in ["https://example.com/a", "https://example.com/b"] {
            let head = request(url: url)
            #expect(try store.lookup(CacheKey(request: head)!, requestHeaders: head.headerFields) == nil, "\(url)")
        }
    }

    @Test("verify finds what colliding ids left — an entry listing another URL's variant, a stale LRU rank, doubled totals — and repair mends it, keeping the whole variant")
    func verifyRepairsCollision() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        try storeAAndB(in: directory) { store throws in #expect(try store.verify().isClean) }
        // What the second commit under one id did: /b's record over /a's id, /b's entry listing it,
        // and nothing taken back from the totals or the LRU index.
        do {
            let environment = try Environment(path: directory.path)
            defer { environment.close() }
            let variants = try environment.openDatabase(named: "variants")
            let entries = try environment.openDatabase(named: "entries")
            try environment.write { txn in
                let records: [(key: UInt64, value: [UInt8])] = try txn.entries(in: variants)
                try #require(records.count == 2)
                let (a, b) = (records[0], records[1])
                try txn.put(a.key, b.value, in: variants)
                _ = try txn.delete(b.key, in: variants)
                let keys: [(key: [UInt8], value: [UInt8])] = try txn.entries(in: entries)
                let bKey = try #require(keys.first { String(decoding: $0.key, as: UTF8.self).hasSuffix("/b") }).key
                try txn.put(bKey, withUnsafeBytes(of: a.key.bigEndian) { Array($0) }, in: entries)
            }
        }
        let store = try CacheStore(options: options(directory))
        defer { store.close() }
        let report = try store.verify()
        #expect(Set(report.problems.map(\.kind)) == [.misfiled, .lruInconsistent, .totalsInconsistent], "\(report.problems)")
        #expect(report.problems.first { $0.kind == .misfiled }?.url?.hasSuffix("https://example.com/a") == true)

        let repaired = try store.verify(repair: true)
        #expect(repaired.indexRepairs == 3)
        #expect(try store.verify().isClean)
        let b = request(url: "https://example.com/b")
        let entry = try #require(try store.lookup(CacheKey(request: b)!, requestHeaders: b.headerFields))
        #expect(try bytes(of: entry) == Array("body of b".utf8))
        let a = request(url: "https://example.com/a")
        #expect(try store.lookup(CacheKey(request: a)!, requestHeaders: a.headerFields) == nil)
        #expect(try store.statistics().entries == 1)
        #expect(try store.leastRecentlyUsed() == [entry.id])
    }
}
