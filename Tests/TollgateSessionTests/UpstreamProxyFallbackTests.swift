import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing
import TollgateHTTP
import TollgateTesting

@testable import TollgateSession

/// ``SessionConfiguration/upstreamProxyFallbacks``: when the upstream proxy cannot be connected
/// to, the next one in order is (Squid's `FIRST_UP_PARENT`); one that answers is used, even
/// when its answer is a refusal.
@Suite("Upstream proxies tried in order", .timeLimit(.minutes(1)))
struct UpstreamProxyFallbackTests {
    @Test("A plain request goes to the second proxy while the first refuses connections, and the first is then passed over")
    func plainRequestToTheSecond() async throws {
        // Any HTTP server takes a proxy's absolute-form request; this one says what it was asked.
        let second = try await LoopbackOrigin.start { request, respond in respond.send(status: 200, body: "second got \(request.target)") }
        defer { second.stop() }
        let first = ClosedPort().port
        var configuration = SessionConfiguration.ephemeral
        configuration.upstreamProxy = UpstreamProxy(host: "127.0.0.1", port: first)
        configuration.upstreamProxyFallbacks = [UpstreamProxy(host: "127.0.0.1", port: second.port)]
        let session = Session(configuration: configuration)
        defer { session.invalidateAndCancel() }

        let (task, body) = try await load(session, Request(url: try #require(HTTPURL(string: "http://origin.test/a"))))
        #expect(task.error == nil, "\(task.error.map { "\($0)" } ?? "")")
        #expect(body == "second got http://origin.test/a")
        #expect(session.pool.targetHealth.withLockedValue { $0.isPaused(ConnectionTarget(host: "127.0.0.1", port: first), now: .now()) })
        // In order, not in turn: with both up the first would be used; the second stays used while
        // the first is passed over.
        let (again, _) = try await load(session, Request(url: try #require(HTTPURL(string: "http://origin.test/b"))))
        #expect(again.error == nil)
        #expect(second.requests.map(\.target) == ["http://origin.test/a", "http://origin.test/b"])
    }

    @Test("An https task's tunnel goes through the second proxy (a Python CONNECT proxy) when the first is down")
    func tunnelThroughTheSecond() async throws {
        let pki = try TestPKI()
        let origin = try await LoopbackOrigin.start(tls: pki.serverConfiguration) { _, respond in respond.send(status: 200, body: "over tls") }
        defer { origin.stop() }
        let parent = try await PythonConnectProxy.start()
        defer { parent.stop() }
        var configuration = SessionConfiguration.ephemeral
        configuration.upstreamProxy = UpstreamProxy(host: "127.0.0.1", port: ClosedPort().port)
        configuration.upstreamProxyFallbacks = [UpstreamProxy(host: "127.0.0.1", port: parent.port)]
        configuration.tlsConfiguration = pki.sessionTLSConfiguration
        let session = Session(configuration: configuration)
        defer { session.invalidateAndCancel() }

        let (task, body) = try await load(session, Request(url: origin.url("/t")))
        #expect(task.error == nil, "\(task.error.map { "\($0)" } ?? "")")
        #expect(body == "over tls")
        #expect(parent.tunnels == ["127.0.0.1:\(origin.port)"])

        // A stream task's tunnel too.
        let stream = try session.streamTask(withHostName: "127.0.0.1", port: origin.port)
        stream.resume()
        try await eventually("the stream's tunnel") { parent.tunnels.count == 2 }
        stream.cancel()
    }

    @Test("A proxy that answers the CONNECT with a refusal is up: its refusal is the task's, the next proxy is not asked")
    func refusalIsNotAFailover() async throws {
        // Answers every request, CONNECT included, 403.
        let refusing = try await LoopbackOrigin.start { _, respond in respond.send(status: 403, body: "denied by policy") }
        defer { refusing.stop() }
        let parent = try await PythonConnectProxy.start()
        defer { parent.stop() }
        var configuration = SessionConfiguration.ephemeral
        configuration.upstreamProxy = UpstreamProxy(host: "127.0.0.1", port: refusing.port)
        configuration.upstreamProxyFallbacks = [UpstreamProxy(host: "127.0.0.1", port: parent.port)]
        let session = Session(configuration: configuration)
        defer { session.invalidateAndCancel() }

        let (task, _) = try await load(session, Request(url: try #require(HTTPURL(string: "https://origin.test/x"))))
        let error = try #require(task.error)
        #expect(error.detail.contains("refused CONNECT origin.test:443"), "\(error.detail)")
        #expect(parent.tunnels.isEmpty)
        #expect(!session.pool.targetHealth.withLockedValue { $0.isPaused(ConnectionTarget(host: "127.0.0.1", port: refusing.port), now: .now()) })
    }
}
