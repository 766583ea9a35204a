import Foundation
import Testing
import TollgateHTTP
import TollgatePolicy

@testable import TollgateSession

/// The delegate's answers, asked directly with tasks that are never resumed (no network).
@Suite("PolicySessionDelegate: redirects and willCacheResponse from the rules", .timeLimit(.minutes(1)))
struct PolicySessionDelegateTests {
    typealias F = RuntimeFixture

    /// What the delegate answers to a redirect of a request for `from` to `to`.
    static func redirect(_ runtime: PolicyRuntime, from: String, to: String) throws -> String {
        let route = runtime.route(try F.url(from))
        let delegate = try #require(route.session.delegate as? PolicySessionDelegate)
        let task = try route.session.dataTask(with: F.request(from))
        defer { task.cancel() }
        let answer = Answer<RedirectDecision>()
        delegate.task(
            task,
            willPerformHTTPRedirection: HTTPResponseHead(status: 302, headerFields: ["Location": to]),
            newRequest: try F.request(to),
            completionHandler: answer.handler
        )
        #expect(answer.count == 1)
        switch try #require(answer.value).base {
        case .follow(let request): return "follow \(request.url)"
        case .deliverRedirectResponse: return "pass"
        case .unanswered: return "not implemented"
        }
    }

    @Test func redirectsAreAnsweredFromTheModeOfTheRequestsSession() throws {
        let runtime = PolicyRuntime(configuration: try F.configuration(), sourceFile: nil)
        defer { runtime.shutdown() }
        // default: pass
        #expect(try Self.redirect(runtime, from: "http://a.test/", to: "http://a.test/b") == "pass")
        // web: follow, to any host
        #expect(
            try Self.redirect(runtime, from: "http://www.example.com/", to: "http://cdn.test/x")
                == "follow http://cdn.test/x"
        )
        // api: follow-same-host
        #expect(
            try Self.redirect(runtime, from: "http://api.example.com/a", to: "http://api.example.com:8080/b")
                == "follow http://api.example.com:8080/b"
        )
        #expect(
            try Self.redirect(runtime, from: "http://api.example.com/a", to: "https://api.example.com/b")
                == "follow https://api.example.com/b"
        )
        #expect(try Self.redirect(runtime, from: "http://api.example.com/a", to: "http://www.example.com/") == "pass")
        #expect(try Self.redirect(runtime, from: "https://api.example.com/a", to: "http://api.example.com/") == "pass")
    }

    @Test func aRedirectToADeniedHostIsNeverFollowed() throws {
        let runtime = PolicyRuntime(configuration: try F.configuration(), sourceFile: nil)
        defer { runtime.shutdown() }
        #expect(
            try Self.redirect(runtime, from: "http://www.example.com/", to: "http://blocked.example.com/") == "pass"
        )
    }

    @Test func theDecisionIsLookedUpForTheTasksCurrentRequestURL() throws {
        let runtime = PolicyRuntime(configuration: try F.configuration(), sourceFile: nil)
        defer { runtime.shutdown() }
        // A task on the default session whose URL is web's: web's mode (follow) answers.
        let session = try #require(runtime.sessions["default"])
        let delegate = try #require(session.delegate as? PolicySessionDelegate)
        let task = try session.dataTask(with: F.request("http://www.example.com/"))
        defer { task.cancel() }
        let answer = Answer<RedirectDecision>()
        delegate.task(
            task,
            willPerformHTTPRedirection: HTTPResponseHead(status: 301),
            newRequest: try F.request("http://other.test/"),
            completionHandler: answer.handler
        )
        guard case .follow = try #require(answer.value).base else {
            Issue.record("expected follow")
            return
        }
    }

    /// What the delegate answers to `willCacheResponse` for a response to `url`.
    static func cache(
        _ runtime: PolicyRuntime,
        _ url: String,
        headers: HeaderFields = ["Cache-Control": "max-age=60"]
    ) throws -> (proposed: CachedResponse, chosen: CachedResponse?) {
        let route = runtime.route(try F.url(url))
        let delegate = try #require(route.session.delegate as? PolicySessionDelegate)
        let task = try route.session.dataTask(with: F.request(url))
        defer { task.cancel() }
        let arrival = Date()
        let proposed = CachedResponse(
            request: HTTPRequestHead(url: try F.url(url)),
            response: HTTPResponseHead(status: 200, headerFields: headers),
            bodyLength: 4,
            requestTime: arrival,
            responseTime: arrival
        )
        let answer = Answer<CacheDecision>()
        delegate.dataTask(task, willCacheResponse: proposed, completionHandler: answer.handler)
        #expect(answer.count == 1)
        switch try #require(answer.value).base {
        case .store(let chosen): return (proposed, chosen)
        case .doNotStore: return (proposed, nil)
        case .unanswered:
            Issue.record("not implemented")
            return (proposed, nil)
        }
    }

    @Test func storeDenyStoresNothing() throws {
        let runtime = PolicyRuntime(configuration: try F.configuration(), sourceFile: nil)
        defer { runtime.shutdown() }
        #expect(try Self.cache(runtime, "http://nocache.test/a").chosen == nil)
    }

    @Test func storeAllowStoresTheProposedResponseUnchanged() throws {
        let runtime = PolicyRuntime(configuration: try F.configuration(), sourceFile: nil)
        defer { runtime.shutdown() }
        let (proposed, chosen) = try Self.cache(runtime, "http://www.example.com/a")
        let stored = try #require(chosen)
        #expect(stored.response == proposed.response)
        #expect(stored.bodyLength == proposed.bodyLength)
    }

    @Test func forceTTLStoresACopyFreshForTheTTL() throws {
        let runtime = PolicyRuntime(configuration: try F.configuration(), sourceFile: nil)
        defer { runtime.shutdown() }
        let (proposed, chosen) = try Self.cache(
            runtime,
            "http://api.example.com/v1",
            headers: ["Cache-Control": "no-cache, max-age=0", "ETag": "\"v1\""]
        )
        let stored = try #require(chosen)
        #expect(stored.response.headerFields.values(for: "Cache-Control") == ["max-age=0, s-maxage=600"])
        #expect(stored.response.headerFields["ETag"] == "\"v1\"")
        #expect(stored.bodyLength == proposed.bodyLength)
        #expect(stored.request == proposed.request)
        #expect(stored.responseTime == proposed.responseTime)
    }

    @Test func aPrivateCacheGetsMaxAgeToo() throws {
        var configuration = try F.configuration()
        configuration.cache.kind = .private
        let runtime = PolicyRuntime(configuration: configuration, sourceFile: nil)
        defer { runtime.shutdown() }
        let stored = try #require(try Self.cache(runtime, "http://api.example.com/v1").chosen)
        #expect(stored.response.headerFields["Cache-Control"] == "max-age=600, s-maxage=600")
    }
}
