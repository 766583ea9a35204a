import Foundation
import Testing
import TollgateCache
import TollgateHTTP

@Suite("Set-Cookie in stored copies: stripped by default, kept with cache.set-cookie: store", .timeLimit(.minutes(1)))
struct SetCookieStorageTests {
    let url = "https://example.com/page"

    @Test("By default the stored copy has no Set-Cookie, and the gate says so")
    func strippedByDefault() throws {
        try withStore { store, _ in
            try put(store, url, body: pattern(10), responseLines: ["Cache-Control: max-age=60", "Set-Cookie: a=1"])
            let head = request([], url: url)
            let entry = try #require(try store.lookup(CacheKey(request: head)!, requestHeaders: [:]))
            #expect(entry.response.headerFields["Set-Cookie"] == nil)
            let gate = CacheRules.shared.storability(
                request: head, response: response(["Cache-Control: max-age=60", "Set-Cookie: a=1"]), bodyLength: 10,
                context: StorabilityContext(capacity: 1 << 30)
            )
            #expect(gate == .store(notes: [.setCookieStripped]))
        }
    }

    @Test("With storesSetCookie the stored copy keeps every Set-Cookie line, and private-listed fields still go")
    func keptWhenAsked() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var options = options(directory)
        options.rules.storesSetCookie = true
        let store = try CacheStore(options: options)
        defer { store.close() }
        try put(
            store, url, body: pattern(10),
            responseLines: ["Cache-Control: max-age=60, private=\"X-Secret\"", "Set-Cookie: a=1", "Set-Cookie: b=2", "X-Secret: s"]
        )
        let entry = try #require(try store.lookup(CacheKey(request: request([], url: url))!, requestHeaders: [:]))
        #expect(entry.response.headerFields.values(for: "Set-Cookie") == ["a=1", "b=2"])
        #expect(entry.response.headerFields["X-Secret"] == nil)
    }
}
