import Foundation
import Testing
import TollgateCache
import TollgateHTTP
import TollgateStore

/// Ids unique to each opening of a store, so that processes sharing it never file two responses
/// under one id (CacheSafetyTests has two proxies on one cache).
@Suite("CacheStore ids: a block for each opening", .timeLimit(.minutes(1)))
struct CacheStoreIDBlockTests {
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
        do {
            let store = try CacheStore(options: options(directory))
            try put(store, "https://example.com/a", body: Array("body of a".utf8))
            try put(store, "https://example.com/b", body: Array("body of b".utf8))
            store.close()
        }
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
}
