import Foundation
import Testing
import TollgateCache
import TollgateHTTP
import TollgateStore

@Suite("CacheStore index details", .timeLimit(.minutes(1)))
struct CacheStoreIndexTests {
    @Test("verify detects a corrupted inline body")
    func corruptedInlineBody() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let url = "https://example.com/inline"
        do {
            let store = try CacheStore(options: options(directory))
            try put(store, url, body: pattern(200))
            store.close()
        }
        // Flip the last byte of the record (the body's last byte) behind the store's back.
        try changeVariants(in: directory) { txn, variants, entries in
            var record = try #require(entries.first).value
            record[record.count - 1] ^= 0xFF
            try txn.put(entries[0].key, record, in: variants)
        }
        let store = try CacheStore(options: options(directory))
        defer { store.close() }
        let report = try store.verify()
        #expect(report.problems.map(\.kind) == [.digestMismatch])
        #expect(report.problems.first?.url == url)
    }

    @Test("Hits reach the LRU index in the background once a batch is full")
    func backgroundAccessFlush() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var settings = options(directory)
        settings.accessBatchSize = 1
        let store = try CacheStore(options: settings)
        defer { store.close() }
        let first = try put(store, "https://example.com/1", body: pattern(10))
        let second = try put(store, "https://example.com/2", body: pattern(10))
        #expect(try store.leastRecentlyUsed() == [first, second])
        let head = request(url: "https://example.com/1")
        #expect(try store.lookup(CacheKey(request: head)!, requestHeaders: head.headerFields) != nil)
        var order = try store.leastRecentlyUsed()
        for _ in 0..<200 where order != [second, first] {
            try await Task.sleep(for: .milliseconds(10))
            order = try store.leastRecentlyUsed()
        }
        #expect(order == [second, first])
    }

    @Test("A URL too long for an LMDB key is stored under its digest")
    func longURL() throws {
        try withStore { store, _ in
            let url =
                "https://example.com/" + String(repeating: "segment/", count: 100) + "?q="
                + String(repeating: "x", count: 300)
            try put(store, url, body: pattern(64))
            let head = request(url: url)
            let entry = try #require(try store.lookup(CacheKey(request: head)!, requestHeaders: head.headerFields))
            #expect(entry.response.url == url)
            #expect(entry.response.key.url == url)
            #expect(try store.list().map(\.url) == [url])
            #expect(try store.remove(url: url) == 1)
        }
    }

    @Test("An unsafe request's invalidations remove the stored entries they name")
    func invalidationRemovesEntries() throws {
        try withStore { store, _ in
            try put(store, "https://example.com/items/1", body: pattern(10))
            try put(store, "https://example.com/items", body: pattern(10))
            try put(store, "https://example.com/other", body: pattern(10))
            let keys = CacheRules.shared.invalidations(
                for: request(method: .post, url: "https://example.com/items"),
                response: response(["Location: /items/1"], status: 201)
            )
            var removed = 0
            for key in keys { removed += try store.remove(key: key) }
            #expect(removed == 2)
            #expect(try store.list().map(\.url) == ["https://example.com/other"])
        }
    }

    @Test("list shows url, status, size and stored-at; lookup fills last-access")
    func listing() throws {
        let clock = TestClock()
        try withStore(clock: clock) { store, _ in
            try put(store, "https://example.com/a", body: pattern(12), status: 404)
            clock.advance(5)
            try put(store, "https://example.com/b", body: pattern(7))
            let listing = try store.list()
            #expect(listing.map(\.url) == ["https://example.com/a", "https://example.com/b"])
            #expect(listing.map(\.status) == [404, 200])
            #expect(listing.map(\.size) == [12, 7])
            #expect(listing.map(\.storedAt) == [now, now.addingTimeInterval(5)])
            #expect(try store.list(limit: 1).count == 1)
            clock.advance(5)
            let head = request(url: "https://example.com/a")
            _ = try store.lookup(CacheKey(request: head)!, requestHeaders: head.headerFields)
            try store.flush()
            let entry = try #require(try store.lookup(CacheKey(request: head)!, requestHeaders: head.headerFields))
            #expect(entry.response.lastAccess == now.addingTimeInterval(10))
            #expect(entry.response.storedAt == now)
        }
    }
}
