import Foundation
import Testing
import TollgateCache
import TollgateHTTP

/// At most `maximumVariantsPerKey` variants of one URL: a URL that varies on a field clients fill
/// at will would otherwise gather one variant per value.
@Suite("CacheStore: variants per URL", .timeLimit(.minutes(1)))
struct CacheStoreVariantLimitTests {
    private let url = "https://example.com/varies"

    /// Stores the variant for `User-Agent: agent`.
    private func store(_ store: CacheStore, agent: String) throws {
        try put(
            store, url, body: Array("for \(agent)".utf8),
            responseLines: ["Cache-Control: max-age=60", "Vary: User-Agent"], requestLines: ["User-Agent: \(agent)"]
        )
    }

    /// The stored body a request with `User-Agent: agent` selects, if any.
    private func body(_ store: CacheStore, agent: String) throws -> String? {
        let head = request(["User-Agent: \(agent)"], url: url)
        return try store.lookup(CacheKey(request: head)!, requestHeaders: head.headerFields).map { String(decoding: try bytes(of: $0), as: UTF8.self) }
    }

    @Test("Past the limit, storing a variant removes the URL's least recently used one; the totals follow")
    func leastRecentlyUsedGoes() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var options = options(directory)
        options.maximumVariantsPerKey = 3
        let cache = try CacheStore(options: options)
        defer { cache.close() }
        for agent in ["a", "b", "c"] { try store(cache, agent: agent) }
        #expect(try body(cache, agent: "a") == "for a")  // a is used again: b is now the oldest use
        try store(cache, agent: "d")
        #expect(try body(cache, agent: "b") == nil)
        #expect(try body(cache, agent: "a") == "for a")
        #expect(try body(cache, agent: "c") == "for c")
        #expect(try body(cache, agent: "d") == "for d")
        for agent in (0..<20).map({ "agent-\($0)" }) { try store(cache, agent: agent) }
        #expect(try cache.statistics().entries == 3)
        #expect(try cache.verify().problems.isEmpty)
    }

    @Test("The default keeps 16")
    func defaultLimit() throws {
        try withStore { cache, _ in
            for agent in (0..<20).map({ "agent-\($0)" }) { try store(cache, agent: agent) }
            #expect(try cache.statistics().entries == 16)
            #expect(try body(cache, agent: "agent-19") == "for agent-19")
            #expect(try body(cache, agent: "agent-0") == nil)
        }
    }
}
