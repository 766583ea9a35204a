import Foundation
import NIOCore
import Testing
import TollgateCache
import TollgateHTTP
@testable import TollgateSession
import TollgateTesting

/// A session on a cache opened read-only (`cache.read-only`): it serves what was stored, goes
/// to the network for the rest, and writes nothing back.
@Suite("The session on a read-only cache", .timeLimit(.minutes(1)))
struct SessionReadOnlyCacheTests {
    @Test("Hits served, misses fetched and not stored (read-only), a 304 served merged and not written, invalidations kept")
    func servesAndWritesNothing() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in
            switch request.path {
            case "/stale" where request.headerFields["If-None-Match"] == "\"v1\"":
                respond.send(status: 304, headers: ["ETag": "\"v1\"", "Cache-Control": "max-age=0", "X-Fresh": "yes"])
            case "/stale":
                respond.send(status: 200, headers: ["ETag": "\"v1\"", "Cache-Control": "max-age=0"], body: "stale body")
            default:
                respond.send(status: 200, headers: ["Cache-Control": "max-age=600"], body: "body of \(request.path) #\(request.requestNumberOnConnection)")
            }
        }
        defer { origin.stop() }
        let fixture = try CacheFixture()
        let warming = fixture.session()
        _ = try await load(warming, Request(url: origin.url("/fresh")))
        _ = try await load(warming, Request(url: origin.url("/stale")))
        warming.invalidateAndCancel()
        try fixture.reopen(readOnly: true)
        let before = try directoryContents(fixture.directory, excluding: ["lock.mdb"])
        let requestsBefore = origin.requestCount

        let session = fixture.session()
        let (hit, hitBody) = try await load(session, Request(url: origin.url("/fresh")))
        #expect(hit.cacheOutcome?.cacheStatus() == "tollgate; hit")
        #expect(hitBody.hasPrefix("body of /fresh"))
        #expect(origin.requestCount == requestsBefore)

        // A miss goes to the network and is passed on unstored, saying why; so does the next one.
        let (miss, _) = try await load(session, Request(url: origin.url("/new")))
        #expect(miss.cacheOutcome?.stored == false)
        #expect(miss.cacheOutcome?.detail == "read-only")
        let (again, _) = try await load(session, Request(url: origin.url("/new")))
        #expect(again.cacheOutcome?.result == .uriMiss)
        #expect(origin.requestCount == requestsBefore + 2)

        // A stale entry is revalidated; the 304's fields reach the client, not the store.
        let (revalidated, body) = try await load(session, Request(url: origin.url("/stale")))
        #expect(body == "stale body")
        #expect(revalidated.cacheOutcome?.cacheStatus() == "tollgate; fwd=stale; fwd-status=304")
        #expect(revalidated.response?.headerFields["X-Fresh"] == "yes")
        let stored = try #require(try fixture.cache.store.lookup(CacheKey(url: origin.url("/stale")), requestHeaders: [:]))
        #expect(stored.response.headerFields["X-Fresh"] == nil)

        // An unsafe request's invalidation holds for the process: the entry is never served again.
        _ = try await load(session, Request(method: .post, url: origin.url("/fresh"), body: .bytes(ByteBuffer(string: "x"))))
        for _ in 0..<2 {
            let (after, _) = try await load(session, Request(url: origin.url("/fresh")))
            #expect(after.cacheOutcome?.result == .uriMiss)
        }
        // Only what the store holds is marked (the marks last as long as the process; any client may POST).
        _ = try await load(session, Request(method: .post, url: origin.url("/never-stored"), body: .bytes(ByteBuffer(string: "x"))))
        #expect(fixture.cache.isInvalidated(CacheKey(url: origin.url("/fresh")), storedAt: .distantPast))
        #expect(!fixture.cache.isInvalidated(CacheKey(url: origin.url("/never-stored")), storedAt: .distantPast))
        session.invalidateAndCancel()
        fixture.cache.store.close()
        #expect(try directoryContents(fixture.directory, excluding: ["lock.mdb"]) == before)
    }
}
