import Foundation
import NIOConcurrencyHelpers
import Testing
import TollgateCache
import TollgateHTTP
@testable import TollgateSession
import TollgateTesting

@Suite("A HEAD's answer updates or invalidates the stored GET response (RFC 9111 §4.3.5)", .timeLimit(.minutes(1)))
struct SessionHeadUpdateTests {
    /// An origin whose GET is stale at once and whose HEAD answers 200 (never 304) with the
    /// ETag `headETag` holds, fresh for ten minutes, and `X-Version: 2`.
    private func origin(headETag: NIOLockedValueBox<String>) async throws -> LoopbackOrigin {
        try await LoopbackOrigin.start { request, respond in
            if request.method == "HEAD" {
                let fields: HeaderFields = [
                    "ETag": headETag.withLockedValue { $0 }, "Cache-Control": "max-age=600", "X-Version": "2", "Content-Length": "4",
                ]
                respond.sendHead(status: 200, headers: fields)
                return
            }
            respond.send(status: 200, headers: ["ETag": "\"v1\"", "Cache-Control": "max-age=0", "X-Version": "1"], body: "body")
        }
    }

    private func stored(_ fixture: CacheFixture, _ url: HTTPURL) -> StoredResponse? {
        (try? fixture.cache.store.lookup(CacheKey(url: url), requestHeaders: [:]))?.response
    }

    @Test("A 200 with the stored ETag and length updates its fields and freshness: the next GET is a hit with them")
    func updated() async throws {
        let etag = NIOLockedValueBox("\"v1\"")
        let origin = try await origin(headETag: etag)
        defer { origin.stop() }
        let fixture = try CacheFixture()
        let session = fixture.session()
        let url = origin.url("/r")
        _ = try await load(session, Request(url: url))
        let (headTask, _) = try await load(session, Request(method: .head, url: url))
        #expect(headTask.response?.headerFields["X-Version"] == "2")
        try await eventually { self.stored(fixture, url)?.headerFields["X-Version"] == "2" }

        let (hit, body) = try await load(session, Request(url: url))
        #expect(body == "body")
        #expect(hit.cacheOutcome?.cacheStatus() == "tollgate; hit")
        #expect(hit.response?.headerFields["X-Version"] == "2")
        #expect(origin.requests.map(\.method) == ["GET", "HEAD"])
    }

    @Test("A 200 with another ETag invalidates the stored response: the next GET goes to the origin")
    func invalidated() async throws {
        let etag = NIOLockedValueBox("\"v2\"")
        let origin = try await origin(headETag: etag)
        defer { origin.stop() }
        let fixture = try CacheFixture()
        let session = fixture.session()
        let url = origin.url("/r")
        _ = try await load(session, Request(url: url))
        #expect(stored(fixture, url) != nil)
        _ = try await load(session, Request(method: .head, url: url))
        try await eventually { self.stored(fixture, url) == nil }
        _ = try await load(session, Request(url: url))
        #expect(origin.requests.map(\.method) == ["GET", "HEAD", "GET"])
    }
}
