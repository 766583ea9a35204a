import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing
import TollgateCache
import TollgateHTTP
@testable import TollgateSession
import TollgateTesting

/// Runs one request to completion and returns the task (for its response, outcome, metrics).
func load(_ session: Session, _ request: Request) async throws -> (DataTask, String) {
    let body = NIOLockedValueBox<String?>(nil)
    let task = try session.dataTask(with: request) { data, _, _ in
        body.withLockedValue { $0 = data.map { String(buffer: $0) } ?? "" }
    }
    task.resume()
    try await eventually("task done") { task.state == .completed && body.withLockedValue({ $0 }) != nil }
    return (task, body.withLockedValue { $0 } ?? "")
}

@Suite("The response cache in the session", .timeLimit(.minutes(1)))
struct SessionCacheTests {
    @Test("A fresh stored response is served without asking the origin, with Cache-Status hit")
    func freshHit() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.send(status: 200, headers: ["Cache-Control": "max-age=60"], body: "cached body")
        }
        defer { origin.stop() }
        let fixture = try CacheFixture()
        let session = fixture.session()
        let (first, firstBody) = try await load(session, Request(url: origin.url("/a")))
        #expect(firstBody == "cached body")
        #expect(first.cacheOutcome?.cacheStatus() == "tollgate; fwd=uri-miss; stored")
        let (second, secondBody) = try await load(session, Request(url: origin.url("/a")))
        #expect(secondBody == "cached body")
        #expect(second.cacheOutcome?.cacheStatus() == "tollgate; hit")
        #expect(second.response?.headerFields["Age"] != nil)
        #expect(origin.requestCount == 1)
    }

    @Test("no-store and private responses are not stored in a shared cache, and say why")
    func notStored() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in
            let control = request.path == "/private" ? "private, max-age=60" : "no-store"
            respond.send(status: 200, headers: ["Cache-Control": control], body: "x")
        }
        defer { origin.stop() }
        let fixture = try CacheFixture()
        let session = fixture.session()
        for path in ["/private", "/no-store"] {
            let (first, _) = try await load(session, Request(url: origin.url(path)))
            #expect(first.cacheOutcome?.stored == false)
            #expect(first.cacheOutcome?.detail == String(path.dropFirst()))
            _ = try await load(session, Request(url: origin.url(path)))
        }
        #expect(origin.requestCount == 4)
    }

    @Test("A stale response is validated with If-None-Match; a 304 serves the stored body with updated fields")
    func revalidation() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in
            if request.headerFields["If-None-Match"] == "\"v1\"" {
                respond.send(status: 304, headers: ["ETag": "\"v1\"", "Cache-Control": "max-age=0", "X-Fresh": "yes"])
            } else {
                respond.send(status: 200, headers: ["ETag": "\"v1\"", "Cache-Control": "max-age=0"], body: "version one")
            }
        }
        defer { origin.stop() }
        let fixture = try CacheFixture()
        let session = fixture.session()
        _ = try await load(session, Request(url: origin.url("/doc")))
        let (second, body) = try await load(session, Request(url: origin.url("/doc")))
        #expect(body == "version one")
        #expect(origin.requests.last?.headerFields["If-None-Match"] == "\"v1\"")
        #expect(second.cacheOutcome?.cacheStatus() == "tollgate; fwd=stale; fwd-status=304")
        #expect(second.response?.status == 200)
        #expect(second.response?.headerFields["X-Fresh"] == "yes")
        let stored = try #require(try fixture.cache.store.lookup(CacheKey(url: origin.url("/doc")), requestHeaders: [:]))
        #expect(stored.response.headerFields["X-Fresh"] == "yes")
    }

    @Test("A client's own conditional request is answered 304 from a fresh entry")
    func clientConditional() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.send(status: 200, headers: ["ETag": "\"abc\"", "Cache-Control": "max-age=60"], body: "payload")
        }
        defer { origin.stop() }
        let fixture = try CacheFixture()
        let session = fixture.session()
        _ = try await load(session, Request(url: origin.url("/c")))
        let (task, body) = try await load(session, Request(url: origin.url("/c"), headerFields: ["If-None-Match": "\"abc\""]))
        #expect(task.response?.status == 304)
        #expect(body == "")
        #expect(origin.requestCount == 1)
    }

    @Test("A successful POST invalidates the stored response of its URL")
    func invalidation() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, headers: ["Cache-Control": "max-age=60"], body: request.method)
        }
        defer { origin.stop() }
        let fixture = try CacheFixture()
        let session = fixture.session()
        _ = try await load(session, Request(url: origin.url("/item")))
        let (post, _) = try await load(session, Request(method: .post, url: origin.url("/item"), body: .string("change")))
        #expect(post.cacheOutcome?.result == .method)
        try await eventually("invalidated") {
            (try? fixture.cache.store.lookup(CacheKey(url: origin.url("/item")), requestHeaders: [:])) == nil
        }
        let (_, body) = try await load(session, Request(url: origin.url("/item")))
        #expect(body == "GET")
        #expect(origin.requestCount == 3)
    }

    @Test("HEAD is answered from a stored GET")
    func headFromGet() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.send(status: 200, headers: ["Cache-Control": "max-age=60"], body: "0123456789")
        }
        defer { origin.stop() }
        let fixture = try CacheFixture()
        let session = fixture.session()
        _ = try await load(session, Request(url: origin.url("/h")))
        let (head, body) = try await load(session, Request(method: .head, url: origin.url("/h")))
        #expect(head.cacheOutcome?.result == .hit)
        #expect(body == "")
        #expect(head.response?.headerFields["Content-Length"] == "10")
        #expect(origin.requestCount == 1)
    }

    @Test("A large body is stored in a file and served from it intact, surviving a restart")
    func largeBodyAndRestart() async throws {
        let payload = (0..<1_500_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.send(status: 200, headers: ["Cache-Control": "max-age=600"], bytes: payload)
        }
        defer { origin.stop() }
        let fixture = try CacheFixture()
        _ = try await fixture.session().data(for: Request(url: origin.url("/big")))
        try fixture.reopen()
        let (body, _) = try await fixture.session().data(for: Request(url: origin.url("/big")))
        #expect(Array(body.readableBytesView) == payload)
        #expect(origin.requestCount == 1)
    }

    @Test("A response whose connection dies mid-body is never stored")
    func truncatedNotStored() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.sendHead(status: 200, headers: ["Cache-Control": "max-age=60", "Content-Length": "100"])
            respond.write("only part")
            respond.after(.milliseconds(30)) { respond.close() }
        }
        defer { origin.stop() }
        let fixture = try CacheFixture()
        let session = fixture.session()
        await #expect(throws: SessionError.self) { _ = try await session.data(for: Request(url: origin.url("/t"))) }
        #expect((try fixture.cache.store.lookup(CacheKey(url: origin.url("/t")), requestHeaders: [:])) == nil)
    }

    @Test("Offline policy: a miss fails without a connection; return-cache-else-load serves stale without asking")
    func policies() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.send(status: 200, headers: ["Cache-Control": "max-age=0"], body: "old")
        }
        defer { origin.stop() }
        let fixture = try CacheFixture()
        await #expect(throws: SessionError(.resourceUnavailable)) {
            _ = try await fixture.session(policy: .returnCacheDontLoad).data(for: Request(url: origin.url("/p")))
        }
        #expect(origin.connectionCount == 0)
        _ = try await fixture.session().data(for: Request(url: origin.url("/p")))
        let (task, body) = try await load(fixture.session(policy: .returnCacheElseLoad), Request(url: origin.url("/p")))
        #expect(body == "old")
        #expect(task.cacheOutcome?.servedStale == true)
        let (_, offline) = try await load(fixture.session(policy: .returnCacheDontLoad), Request(url: origin.url("/p")))
        #expect(offline == "old")
        #expect(origin.requestCount == 1)
        let (reloaded, _) = try await load(fixture.session(policy: .reload), Request(url: origin.url("/p")))
        #expect(origin.requestCount == 2)
        #expect(reloaded.cacheOutcome?.result == .request)
    }

    @Test("Offline policy: a miss while another task is storing the key waits for it and is served what it stored")
    func offlineWaitsForTheStoringTask() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.send(status: 200, headers: ["Cache-Control": "max-age=600"], body: "being stored")
        }
        defer { origin.stop() }
        // Holds the first task between its whole body and its commit (the window a proxy that
        // went offline just after answering has to cover).
        final class Holding: SessionDelegate, DataTaskDelegate, @unchecked Sendable {
            let held = NIOLockedValueBox<(@Sendable () -> Void)?>(nil)
            func dataTask(_ task: DataTask, willCacheResponse proposed: CachedResponse, completionHandler: @escaping @Sendable (CacheDecision) -> Void) {
                held.withLockedValue { $0 = { completionHandler(.store(proposed)) } }
            }
        }
        let holding = Holding()
        let fixture = try CacheFixture()
        let online = try fixture.session(delegate: holding).dataTask(with: Request(url: origin.url("/o")))
        online.resume()
        try await eventually("the first body received, its storing held") { holding.held.withLockedValue { $0 != nil } }

        let offline = Task { try await load(fixture.session(policy: .returnCacheDontLoad), Request(url: origin.url("/o"))) }
        try await Task.sleep(for: .milliseconds(200))
        #expect(origin.requestCount == 1)
        holding.held.withLockedValue { $0 }?()
        let (served, body) = try await offline.value
        #expect(body == "being stored")
        #expect(served.cacheOutcome?.result == .hit)
        #expect(origin.requestCount == 1)
        try await eventually("the first task done") { online.state == .completed }
    }

    @Test("stale-if-error serves the stored response when the origin answers 500 or is gone")
    func staleIfError() async throws {
        let failing = NIOLockedValueBox(false)
        let origin = try await LoopbackOrigin.start { _, respond in
            if failing.withLockedValue({ $0 }) {
                respond.send(status: 500, body: "broken")
            } else {
                respond.send(status: 200, headers: ["Cache-Control": "max-age=0, stale-if-error=600", "ETag": "\"s\""], body: "good")
            }
        }
        let fixture = try CacheFixture()
        let session = fixture.session()
        _ = try await load(session, Request(url: origin.url("/s")))
        failing.withLockedValue { $0 = true }
        let (on500, body500) = try await load(session, Request(url: origin.url("/s")))
        #expect(body500 == "good")
        #expect(on500.cacheOutcome?.detail == "stale-if-error")
        origin.stop()
        try await Task.sleep(for: .milliseconds(50))
        let (_, bodyDown) = try await load(fixture.session(), Request(url: origin.url("/s")))
        #expect(bodyDown == "good")
    }

    @Test("stale-while-revalidate serves at once and revalidates once in the background")
    func staleWhileRevalidate() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in
            respond.after(.milliseconds(100)) {
                respond.send(status: 200, headers: ["Cache-Control": "max-age=0, stale-while-revalidate=600"], body: "r\(request.requestNumberOnConnection)")
            }
        }
        defer { origin.stop() }
        let fixture = try CacheFixture()
        let session = fixture.session()
        _ = try await load(session, Request(url: origin.url("/w")))
        let (stale, body) = try await load(session, Request(url: origin.url("/w")))
        #expect(body == "r1")
        #expect(stale.cacheOutcome?.servedStale == true)
        try await eventually("background revalidation") { origin.requestCount == 2 }
    }

    @Test("Concurrent misses for one URL make one upstream request")
    func collapsing() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.after(.milliseconds(300)) {
                respond.send(status: 200, headers: ["Cache-Control": "max-age=60"], body: "shared")
            }
        }
        defer { origin.stop() }
        let fixture = try CacheFixture()
        let session = fixture.session()
        let bodies = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<5 {
                group.addTask { String(buffer: try await session.data(for: Request(url: origin.url("/same"))).0) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(bodies == Array(repeating: "shared", count: 5))
        #expect(origin.requestCount == 1)
    }

    /// An origin answering with the request's Accept-Language, `Vary: Accept-Language`.
    private func languageOrigin() async throws -> LoopbackOrigin {
        try await LoopbackOrigin.start { request, respond in
            let language = request.headerFields["Accept-Language"] ?? "none"
            respond.send(status: 200, headers: ["Cache-Control": "max-age=60", "Vary": "Accept-Language"], body: language)
        }
    }

    @Test("Variants: Vary selects the stored response by the request's field")
    func vary() async throws {
        let origin = try await languageOrigin()
        defer { origin.stop() }
        let fixture = try CacheFixture()
        let session = fixture.session()
        for language in ["en", "fr", "en", "fr"] {
            let (_, body) = try await load(session, Request(url: origin.url("/v"), headerFields: ["Accept-Language": language]))
            #expect(body == language)
        }
        #expect(origin.requestCount == 2)
    }

    @Test("Vary on Accept-Language: another order, case or spacing of the same preferences is a hit; other weights are not")
    func varyNormalized() async throws {
        let origin = try await languageOrigin()
        defer { origin.stop() }
        let fixture = try CacheFixture()
        let session = fixture.session()
        let asked = ["en, de", "De,EN", "  de ,en;q=1.0", "en;q=0.5, de", "de, en;q=0.50"]
        var bodies: [String] = []
        for language in asked {
            bodies.append(try await load(session, Request(url: origin.url("/v"), headerFields: ["Accept-Language": language])).1)
        }
        #expect(bodies == ["en, de", "en, de", "en, de", "en;q=0.5, de", "en;q=0.5, de"])
        #expect(origin.requestCount == 2)
    }

    @Test("willCacheResponse may refuse storing, and may change what is stored")
    func delegateDecides() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, headers: ["Cache-Control": "max-age=0", "Set-Cookie": "id=1"], body: request.path)
        }
        defer { origin.stop() }
        final class Deciding: SessionDelegate, DataTaskDelegate, @unchecked Sendable {
            func dataTask(_ task: DataTask, willCacheResponse proposed: CachedResponse, completionHandler: @escaping @Sendable (CacheDecision) -> Void) {
                if proposed.request.url.path == "/refuse" {
                    completionHandler(.doNotStore)
                } else {
                    var changed = proposed
                    changed.response.headerFields.replaceOrAdd(name: "Cache-Control", value: "max-age=600")
                    completionHandler(.store(changed))
                }
            }
        }
        let fixture = try CacheFixture()
        let session = fixture.session(delegate: Deciding())
        let (refused, _) = try await load(session, Request(url: origin.url("/refuse")))
        #expect(refused.cacheOutcome?.detail == "policy")
        let (kept, _) = try await load(session, Request(url: origin.url("/ttl")))
        #expect(kept.response?.headerFields["Set-Cookie"] == "id=1")
        let (hit, _) = try await load(session, Request(url: origin.url("/ttl")))
        #expect(hit.cacheOutcome?.result == .hit)
        // The stored copy never hands the first client's cookie to another.
        #expect(hit.response?.headerFields["Set-Cookie"] == nil)
        #expect((try fixture.cache.store.lookup(CacheKey(url: origin.url("/refuse")), requestHeaders: [:])) == nil)
    }
}

extension SessionCacheTests {
    @Test("A cache-key rewrite stores and finds one entry for URLs that differ only in a dropped parameter")
    func cacheKeyRewrite() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, headers: ["Cache-Control": "max-age=60"], body: request.target)
        }
        defer { origin.stop() }
        let fixture = try CacheFixture()
        var configuration = SessionConfiguration.ephemeral
        configuration.responseCache = fixture.cache
        configuration.cacheKeyURL = { url in
            var rewritten = url
            rewritten.pathAndQuery = url.path
            return rewritten
        }
        let session = Session(configuration: configuration)
        let (_, first) = try await load(session, Request(url: origin.url("/obj?sig=1")))
        let (hit, second) = try await load(session, Request(url: origin.url("/obj?sig=2")))
        #expect(first == "/obj?sig=1")
        #expect(second == "/obj?sig=1")
        #expect(hit.cacheOutcome?.result == .hit)
        #expect(origin.requestCount == 1)
    }
}
