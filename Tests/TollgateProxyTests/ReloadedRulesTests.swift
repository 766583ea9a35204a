import Foundation
import Testing
import TollgatePolicy
import TollgateProxy
import TollgateTesting

/// A connection keeps the access rules and limits it derived until the policy changes
/// (ExchangeRules): these tests change the rules between two requests of one kept-alive
/// connection and expect the second to go by the new ones.
@Suite("Rules reloaded while a client connection stays open", .timeLimit(.minutes(1)))
struct ReloadedRulesTests {
    /// A forward proxy whose rules come from a PolicyRuntime the test applies configurations to.
    private func withRuntimeProxy(
        _ configuration: PolicyConfiguration,
        _ body: (PolicyRuntime, Int) async throws -> Void
    ) async throws {
        let runtime = PolicyRuntime(configuration: configuration, sourceFile: nil, prepareSession: { _, _, _ in })
        let server = try await ProxyServer.start(
            ProxyServer.Configuration(listen: ListenAddress(host: "127.0.0.1", port: 0), mode: .forward),
            policy: runtime
        )
        do {
            try await body(runtime, server.boundAddress.port)
        } catch {
            await server.shutdown(gracePeriod: .seconds(1))
            runtime.shutdown()
            throw error
        }
        await server.shutdown(gracePeriod: .seconds(1))
        runtime.shutdown()
    }

    @Test("A destination denied by a reload is refused on the connection that reached it before")
    func destinationDeniedAfterReload() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "ok") }
        defer { origin.stop() }
        try await withRuntimeProxy(PolicyConfiguration()) { runtime, port in
            let client = try await RawClient.connect(port: port)
            defer { client.close() }
            let request = "GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\n\r\n"
            try await client.send(request)
            #expect(try await client.waitForResponses(1).last?.status == 200)

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
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "ok") }
        defer { origin.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-reload-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("ci.pass")
        try Data("s3cret\n".utf8).write(to: file)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)

        try await withRuntimeProxy(PolicyConfiguration()) { runtime, port in
            let client = try await RawClient.connect(port: port)
            defer { client.close() }
            let request = "GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\n\r\n"
            try await client.send(request)
            #expect(try await client.waitForResponses(1).last?.status == 200)

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
        // `/slow` is never answered.
        let origin = try await LoopbackOrigin.start { request, respond in
            if request.target != "/slow" { respond.send(status: 200, body: "ok") }
        }
        defer { origin.stop() }
        try await withRuntimeProxy(PolicyConfiguration()) { runtime, port in
            let client = try await RawClient.connect(port: port)
            defer { client.close() }
            try await client.send("GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try await client.waitForResponses(1).last?.status == 200)

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
}
