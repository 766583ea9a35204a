import Foundation
import NIOConcurrencyHelpers
import Testing
import TollgatePolicy
import TollgateProxy
import TollgateHTTP
import TollgateSession
import TollgateTesting

/// A connection keeps the access rules and limits it derived until the policy changes
/// (ExchangeRules): these tests change the rules between two requests of one kept-alive
/// connection and expect the second to go by the new ones.
@Suite("Rules reloaded while a client connection stays open", .timeLimit(.minutes(1)))
struct ReloadedRulesTests {
    /// Starts an origin answering "ok" (but never `/slow`) and a forward proxy whose rules come
    /// from a PolicyRuntime (default rules at first), opens one client connection and has
    /// `GET /` served on it; then runs `body` with the runtime, the client, the origin and
    /// a request for `/`, to send on the same connection after changing the rules.
    private func afterOneServedRequest(
        _ body: (PolicyRuntime, RawClient, LoopbackOrigin, _ request: String) async throws -> Void
    ) async throws {
        let origin = try await LoopbackOrigin.start { request, respond in
            if request.target != "/slow" { respond.send(status: 200, body: "ok") }
        }
        defer { origin.stop() }
        let runtime = PolicyRuntime(configuration: PolicyConfiguration(), sourceFile: nil, prepareSession: { _, _, _ in })
        try await withForwardProxy(policy: runtime, closing: { runtime.shutdown() }) { port in
            let client = try await RawClient.connect(port: port)
            defer { client.close() }
            try await client.send("GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try await client.waitForResponses(1).last?.status == 200)
            try await body(runtime, client, origin, "GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\n\r\n")
        }
    }

    @Test("A destination denied by a reload is refused on the connection that reached it before")
    func destinationDeniedAfterReload() async throws {
        try await afterOneServedRequest { runtime, client, origin, request in
            var denying = PolicyConfiguration()
            denying.access.destinations = [.init(.deny, .network(CIDR("127.0.0.0/8")!, port: nil)), .init(.allow, .all)]
            let before = runtime.generation
            runtime.apply(denying)
            #expect(runtime.generation > before)

            try await client.send(request)
            let refused = try #require(try await client.waitForResponses(2).last)
            #expect(refused.status == 403)
            #expect(refused.header("Tollgate-Error") == "host-denied")
            #expect(refused.bodyText.contains("access.destinations[0]"), "\(refused.bodyText)")
            #expect(origin.requestCount == 1)
        }
    }

    @Test("Proxy users added by a reload are asked for on the connection that needed none before")
    func usersAddedByReload() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-reload-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("ci.pass")
        try Data("s3cret\n".utf8).write(to: file)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)

        try await afterOneServedRequest { runtime, client, origin, request in
            var withUsers = PolicyConfiguration()
            withUsers.access.users = [.init(name: "ci", passwordFile: file.path)]
            runtime.apply(withUsers)

            try await client.send(request)
            let challenge = try #require(try await client.waitForResponses(2).last)
            #expect(challenge.status == 407)
            #expect(challenge.header("Tollgate-Error") == "proxy-auth-required")
            #expect(origin.requestCount == 1)
        }
    }

    @Test("An upstream timeout shortened by a reload applies to the next request of the connection")
    func upstreamTimeoutAfterReload() async throws {
        try await afterOneServedRequest { runtime, client, origin, _ in
            var short = PolicyConfiguration()
            short.limits.upstreamTimeout = .milliseconds(300)
            runtime.apply(short)

            let started = ContinuousClock.now
            try await client.send("GET http://127.0.0.1:\(origin.port)/slow HTTP/1.1\r\nHost: x\r\n\r\n")
            let timedOut = try #require(try await client.waitForResponses(2, timeout: .seconds(5)).last)
            #expect(timedOut.status == 504)
            #expect(timedOut.header("Tollgate-Error") == "upstream-timeout")
            #expect(ContinuousClock.now - started < .seconds(3))  // the old limit was 10 s
        }
    }

    @Test("A host rule added by a reload refuses the host on the connection whose route was kept")
    func hostRuleAddedByReload() async throws {
        try await afterOneServedRequest { runtime, client, origin, request in
            try await client.send(request)  // a second request on the kept route
            #expect(try await client.waitForResponses(2).map(\.status) == [200, 200])

            var denying = PolicyConfiguration()
            var rule = HostRule(patterns: [try HostPattern("127.0.0.1")])
            rule.trust.deny = true
            denying.hosts = [rule]
            runtime.apply(denying)

            try await client.send(request)
            let refused = try #require(try await client.waitForResponses(3).last)
            #expect(refused.status == 403)
            #expect(refused.header("Tollgate-Error") == "host-denied")
            #expect(refused.bodyText.contains("hosts[0]"), "\(refused.bodyText)")
            #expect(origin.requestCount == 2)
        }
    }
}

/// A listener's connections share the rules and the last route (ListenerMemo): a connection
/// opened after a reload must go by the new ones, not by what the earlier connections shared.
@Suite("Rules reloaded between two connections of a listener", .timeLimit(.minutes(1)))
struct ReloadedRulesNewConnectionTests {
    /// Serves `GET /` on two connections (the second takes what the first's listener kept),
    /// applies `reloaded`, and returns the answer to a third connection's `GET /`.
    private func answerAfterReload(to reloaded: PolicyConfiguration) async throws -> (RawResponse, originRequests: Int) {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "ok") }
        defer { origin.stop() }
        let runtime = PolicyRuntime(configuration: PolicyConfiguration(), sourceFile: nil, prepareSession: { _, _, _ in })
        var answer: RawResponse?
        try await withForwardProxy(policy: runtime, closing: { runtime.shutdown() }) { port in
            let request = "GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            for _ in 0..<2 {
                let client = try await RawClient.connect(port: port)
                defer { client.close() }
                try await client.send(request)
                #expect(try await client.waitForResponses(1).last?.status == 200)
            }
            runtime.apply(reloaded)
            let client = try await RawClient.connect(port: port)
            defer { client.close() }
            try await client.send(request)
            answer = try await client.waitForResponses(1).last
        }
        return (try #require(answer), origin.requestCount)
    }

    @Test("A destination denied by a reload is refused on a connection opened after it")
    func destinationDenied() async throws {
        var denying = PolicyConfiguration()
        denying.access.destinations = [.init(.deny, .network(CIDR("127.0.0.0/8")!, port: nil)), .init(.allow, .all)]
        let (refused, originRequests) = try await answerAfterReload(to: denying)
        #expect(refused.status == 403)
        #expect(refused.header("Tollgate-Error") == "host-denied")
        #expect(refused.bodyText.contains("access.destinations[0]"), "\(refused.bodyText)")
        #expect(originRequests == 2)
    }

    @Test("A host rule added by a reload refuses the host on a connection opened after it")
    func hostRuleAdded() async throws {
        var denying = PolicyConfiguration()
        var rule = HostRule(patterns: [try HostPattern("127.0.0.1")])
        rule.trust.deny = true
        denying.hosts = [rule]
        let (refused, originRequests) = try await answerAfterReload(to: denying)
        #expect(refused.status == 403)
        #expect(refused.bodyText.contains("hosts[0]"), "\(refused.bodyText)")
        #expect(originRequests == 2)
    }
}

/// Counts the routes it is asked for; each route holds for `holds` (nil: not kept).
private final class CountingPolicy: ProxyPolicy {
    let session: Session
    let holds: @Sendable () -> Range<Date>?
    private let asked = NIOLockedValueBox<[String]>([])

    init(session: Session, holds: @escaping @Sendable () -> Range<Date>?) {
        self.session = session
        self.holds = holds
    }

    var configuration: PolicyConfiguration { PolicyConfiguration() }
    /// The authorities routed, in order.
    var routed: [String] { asked.withLockedValue { $0 } }

    func proxyRoute(for url: HTTPURL) -> ProxyRoute {
        asked.withLockedValue { $0.append(url.authority) }
        return ProxyRoute(session: session, sessionName: "default", holds: holds())
    }
}

@Suite("A connection keeps its last route while it holds", .timeLimit(.minutes(1)))
struct KeptRouteTests {
    private func withCountingProxy(
        holds: @escaping @Sendable () -> Range<Date>?,
        _ body: (CountingPolicy, Int) async throws -> Void
    ) async throws {
        let session = Session(configuration: ProxyServer.defaultSessionConfiguration, delegate: nil)
        let policy = CountingPolicy(session: session, holds: holds)
        try await withForwardProxy(policy: policy, closing: { session.invalidateAndCancel() }) { port in
            try await body(policy, port)
        }
    }

    private func origins() async throws -> (LoopbackOrigin, LoopbackOrigin) {
        let first = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "one") }
        let second = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "two") }
        return (first, second)
    }

    @Test("A route that holds for all time is asked for once per host and port of a connection")
    func keptWhileSameHost() async throws {
        let (first, second) = try await origins()
        defer { first.stop(); second.stop() }
        try await withCountingProxy(holds: { PolicyDecisions.always }) { policy, port in
            let client = try await RawClient.connect(port: port)
            defer { client.close() }
            for origin in [first, first, second, second, first] {
                try await client.send("GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\n\r\n")
            }
            let bodies = try await client.waitForResponses(5).map(\.bodyText)
            #expect(bodies == ["one", "one", "two", "two", "one"])
            // Only the last route is kept: back to the first origin asks again.
            #expect(policy.routed == ["127.0.0.1:\(first.port)", "127.0.0.1:\(second.port)", "127.0.0.1:\(first.port)"])
        }
    }

    @Test("A new connection takes the route its listener kept while it holds")
    func keptAcrossConnections() async throws {
        let (first, second) = try await origins()
        defer { first.stop(); second.stop() }
        try await withCountingProxy(holds: { PolicyDecisions.always }) { policy, port in
            for origin in [first, first, second] {
                let client = try await RawClient.connect(port: port)
                defer { client.close() }
                try await client.send("GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                #expect(try await client.waitForResponses(1).count == 1)
            }
            #expect(policy.routed == ["127.0.0.1:\(first.port)", "127.0.0.1:\(second.port)"])
        }
    }

    @Test("A route without a time it holds for is asked for with every request")
    func notKeptWithoutHolds() async throws {
        let (first, second) = try await origins()
        defer { first.stop(); second.stop() }
        try await withCountingProxy(holds: { nil }) { policy, port in
            let client = try await RawClient.connect(port: port)
            defer { client.close() }
            for _ in 0..<3 {
                try await client.send("GET http://127.0.0.1:\(first.port)/ HTTP/1.1\r\nHost: x\r\n\r\n")
            }
            #expect(try await client.waitForResponses(3).count == 3)
            #expect(policy.routed.count == 3)
        }
    }

    @Test("A route whose time has run out (expiring pins) is asked for again")
    func askedAgainAfterItsTime() async throws {
        let (first, second) = try await origins()
        defer { first.stop(); second.stop() }
        // Held for two seconds: long enough that a busy machine sends both requests within it.
        try await withCountingProxy(holds: { Date.distantPast..<Date().addingTimeInterval(2) }) { policy, port in
            let client = try await RawClient.connect(port: port)
            defer { client.close() }
            let request = "GET http://127.0.0.1:\(first.port)/ HTTP/1.1\r\nHost: x\r\n\r\n"
            try await client.send(request)
            try await client.send(request)
            #expect(try await client.waitForResponses(2).count == 2)
            #expect(policy.routed.count == 1)
            try await Task.sleep(for: .milliseconds(2100))
            try await client.send(request)
            #expect(try await client.waitForResponses(3).count == 3)
            #expect(policy.routed.count == 2)
        }
    }
}

/// Runs `body` with the port of a forward proxy on 127.0.0.1 that takes its rules from `policy`;
/// stops the proxy and then calls `close` afterwards, also when `body` throws.
private func withForwardProxy(
    policy: any ProxyPolicy,
    closing close: () -> Void,
    _ body: (Int) async throws -> Void
) async throws {
    let server = try await ProxyServer.start(
        ProxyServer.Configuration(listen: ListenAddress(host: "127.0.0.1", port: 0), mode: .forward),
        policy: policy
    )
    do {
        try await body(server.boundAddress.port)
    } catch {
        await server.shutdown(gracePeriod: .seconds(1))
        close()
        throw error
    }
    await server.shutdown(gracePeriod: .seconds(1))
    close()
}
