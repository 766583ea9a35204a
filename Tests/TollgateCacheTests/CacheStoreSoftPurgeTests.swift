import Foundation
import Testing
import TollgateHTTP

@testable import TollgateCache

@Suite("Soft purges: responses marked stale, not removed")
struct CacheStoreSoftPurgeTests {
    private func lookup(_ store: CacheStore, _ url: String) throws -> CacheEntry? {
        let head = request([], url: url)
        return try store.lookup(CacheKey(request: head)!, requestHeaders: head.headerFields)
    }

    @Test("Marked stale at the purge: stale by the time since, its age its own, the body kept; a later mark keeps the first; a 304 clears it")
    func marksStale() throws {
        let clock = TestClock()
        try withStore(inlineBodyLimit: 100, clock: clock) { store, directory in
            let url = "https://shop.example/p/1"
            try put(store, url, body: pattern(1_000), responseLines: ["Cache-Control: max-age=600, stale-while-revalidate=60", "ETag: \"v1\""])
            try put(store, "https://shop.example/p/2", body: pattern(10), responseLines: ["Cache-Control: max-age=600"])
            clock.advance(100)
            #expect(try store.purge(.url(url), soft: true) == 1)
            let marked = try #require(try lookup(store, url))
            #expect(marked.response.staleSince == clock.now)
            #expect(try bytes(of: marked) == pattern(1_000))
            clock.advance(10)
            let freshness = Freshness(marked.response, now: clock.now)
            #expect(!freshness.isFresh)
            #expect(abs(freshness.staleness - 10) < 0.001, "\(freshness)")
            #expect(freshness.ageFieldValue == 110)
            #expect(freshness.staleWhileRevalidate == 60)
            // Marked again later: still stale since the first mark.
            clock.advance(5)
            #expect(try store.purge(.url(url), soft: true) == 1)
            #expect(try lookup(store, url)?.response.staleSince == marked.response.staleSince)
            // The other URL is untouched, and nothing was removed.
            #expect(try lookup(store, "https://shop.example/p/2")?.response.staleSince == nil)
            #expect(try store.statistics().entries == 2)
            #expect(bodyFiles(directory).count == 1)
            #expect(try store.verify().isClean)
            // The origin's 304 answers the mark.
            let merged = try #require(
                CacheRules.shared.merge304(
                    stored: marked.response, notModified: HTTPResponseHead(status: 304, headerFields: ["ETag": "\"v1\""]),
                    requestTime: clock.now, responseTime: clock.now
                )
            )
            #expect(merged.staleSince == nil)
            #expect(Freshness(merged, now: clock.now).isFresh)
        }
    }

    @Test("A soft purge by prefix or tag marks what it takes; a mark survives encoding, as version 2 alone")
    func prefixTagsAndRecords() throws {
        try withStore { store, _ in
            try put(store, "https://shop.example/media/a", body: pattern(10), responseLines: ["Cache-Control: max-age=600", "Surrogate-Key: x"])
            try put(store, "https://shop.example/media/b", body: pattern(10), responseLines: ["Cache-Control: max-age=600"])
            try put(store, "https://shop.example/other/c", body: pattern(10), responseLines: ["Cache-Control: max-age=600", "Surrogate-Key: x"])
            #expect(try store.purge(.prefix("https://shop.example/media/"), soft: true) == 2)
            #expect(try store.purge(.tags(["x"], field: "Surrogate-Key"), soft: true) == 2)
            #expect(try lookup(store, "https://shop.example/other/c")?.response.staleSince != nil)
            #expect(try store.purge(.tags(["nothing"], field: "Surrogate-Key"), soft: true) == 0)
            #expect(try store.statistics().entries == 3)

            let entry = try #require(try lookup(store, "https://shop.example/media/a"))
            var marked = entry.response
            marked.bodyLength = 0  // metadata alone: no inline body follows
            let record = marked.encodedMetadata()
            #expect(record.first == 2)
            #expect(StoredResponse.decode(record: record)?.staleSince == entry.response.staleSince)
            var unmarked = marked
            unmarked.staleSince = nil
            #expect(unmarked.encodedMetadata().first == 1, "only a marked response is written as version 2")
        }
    }
}
