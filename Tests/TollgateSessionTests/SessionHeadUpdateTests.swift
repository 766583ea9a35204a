import Foundation
import Testing
import TollgateCache
import TollgateHTTP
import TollgateTesting

@testable import TollgateSession

@Suite("A HEAD's answer updates or invalidates the stored GET response (RFC 9111 §4.3.5)", .timeLimit(.minutes(1)))
struct SessionHeadUpdateTests {
    /// An origin whose GET is stale at once and whose HEAD answers 200 (never 304) with the
    /// ETag `headETag`, fresh for ten minutes, and `X-Version: 2`.
    private func origin(headETag: String) async throws -> LoopbackOrigin {
        try await LoopbackOrigin.start { request, respond in
            if request.method == "HEAD" {
                let fields: HeaderFields = [
                    "ETag": headETag, "Cache-Control": "max-age=600", "X-Version": "2", "Content-Length": "4",
                ]
                respond.sendHead(status: 200, headers: fields)
                return
            }
            respond.send(
                status: 200,
                headers: ["ETag": "\"v1\"", "Cache-Control": "max-age=0", "X-Version": "1"],
                body: "body"
            )
        }
    }

    private func stored(_ fixture: CacheFixture, _ url: HTTPURL) -> StoredResponse? {
        (try? fixture.cache.store.lookup(CacheKey(url: url), requestHeaders: [:]))?.response
    }

    /// Stores the origin's GET for `/r` (HEADs answered with `headETag`), then runs `body`.
    private func withStoredGET(
        headETag: String,
        _ body: (LoopbackOrigin, CacheFixture, Session, HTTPURL) async throws -> Void
    ) async throws {
        let origin = try await origin(headETag: headETag)
        defer { origin.stop() }
        let fixture = try CacheFixture()
        let session = fixture.session()
        let url = origin.url("/r")
        _ = try await load(session, Request(url: url))
        #expect(stored(fixture, url) != nil)
        try await body(origin, fixture, session, url)
    }

    @Test("A 200 with the stored ETag and length updates its fields and freshness: the next GET is a hit with them")
    func updated() async throws {
        try await withStoredGET(headETag: "\"v1\"") { origin, fixture, session, url in
            let (headTask, _) = try await load(session, Request(method: .head, url: url))
            #expect(headTask.response?.headerFields["X-Version"] == "2")
            try await eventually { self.stored(fixture, url)?.headerFields["X-Version"] == "2" }

            let (hit, body) = try await load(session, Request(url: url))
            #expect(body == "body")
            #expect(hit.cacheOutcome?.cacheStatus() == "tollgate; hit")
            #expect(hit.response?.headerFields["X-Version"] == "2")
            #expect(origin.requests.map(\.method) == ["GET", "HEAD"])
        }
    }

    @Test("A 200 with another ETag invalidates the stored response: the next GET goes to the origin")
    func invalidated() async throws {
        try await withStoredGET(headETag: "\"v2\"") { origin, fixture, session, url in
            _ = try await load(session, Request(method: .head, url: url))
            try await eventually { self.stored(fixture, url) == nil }
            _ = try await load(session, Request(url: url))
            #expect(origin.requests.map(\.method) == ["GET", "HEAD", "GET"])
        }
    }
}
