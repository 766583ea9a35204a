import Foundation
import NIOConcurrencyHelpers
import Testing
import TollgateHTTP
import TollgatePolicy
import TollgateProxy
import TollgateSession
import TollgateTesting

/// A policy whose one session is made after the server started (so that two proxies can each be
/// the other's parent).
private final class LaterSessionPolicy: ProxyPolicy {
    let configuration = PolicyConfiguration()
    private let session = NIOLockedValueBox<Session?>(nil)

    /// Makes the session, going to `parent` as its upstream proxy when given.
    func makeSession(parent: Int?) {
        var configuration = ProxyServer.defaultSessionConfiguration
        configuration.upstreamProxy = parent.map { UpstreamProxy(host: "127.0.0.1", port: $0) }
        session.withLockedValue { $0 = Session(configuration: configuration) }
    }

    func proxyRoute(for url: HTTPURL) -> ProxyRoute {
        ProxyRoute(session: session.withLockedValue { $0! }, sessionName: SessionSettings.defaultName)
    }

    func stop() { session.withLockedValue { $0?.invalidateAndCancel() } }
}

/// `CDN-Loop` (RFC 8586): every request a proxy forwards carries its own member, and a request
/// that comes back with it is answered 508 instead of going round again.
@Suite("Forwarding loops (CDN-Loop)", .serialized, .timeLimit(.minutes(1)))
struct ForwardingLoopTests {
    private func start(_ policy: LaterSessionPolicy) async throws -> ProxyServer {
        try await ProxyServer.start(ProxyServer.Configuration(listen: ListenAddress(host: "127.0.0.1", port: 0)), policy: policy)
    }

    @Test("Two proxies that are each other's parent answer 508 forwarding-loop at once; the origin is never asked")
    func twoProxiesInALoop() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "origin") }
        defer { origin.stop() }
        let (first, second) = (LaterSessionPolicy(), LaterSessionPolicy())
        let a = try await start(first)
        let b = try await start(second)
        first.makeSession(parent: b.boundAddress.port)
        second.makeSession(parent: a.boundAddress.port)
        defer { first.stop(); second.stop() }

        let response = try await request(
            "GET http://127.0.0.1:\(origin.port)/x HTTP/1.1\r\nHost: 127.0.0.1:\(origin.port)\r\n\r\n", port: a.boundAddress.port
        )
        #expect(response.status == 508)
        #expect(response.header("Tollgate-Error") == "forwarding-loop")
        #expect(response.bodyText.contains("a forwarding loop"), "\(response.bodyText)")
        #expect(origin.requestCount == 0)
        await a.shutdown(gracePeriod: .seconds(1))
        await b.shutdown(gracePeriod: .seconds(1))
    }

    @Test("A chain that does not loop passes: the origin gets one CDN-Loop member per proxy, a client's own kept")
    func chainPasses() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, body: request.headerFields.values(for: "CDN-Loop").joined(separator: " | "))
        }
        defer { origin.stop() }
        let (child, parent) = (LaterSessionPolicy(), LaterSessionPolicy())
        let a = try await start(child)
        let b = try await start(parent)
        child.makeSession(parent: b.boundAddress.port)
        parent.makeSession(parent: nil)
        defer { child.stop(); parent.stop() }

        let response = try await request(
            "GET http://127.0.0.1:\(origin.port)/y HTTP/1.1\r\nHost: 127.0.0.1:\(origin.port)\r\nCDN-Loop: cdn.example; v=1\r\n\r\n",
            port: a.boundAddress.port
        )
        #expect(response.status == 200)
        let members = response.bodyText.split(separator: "|").flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(members.count == 3, "\(response.bodyText)")
        #expect(members.first == "cdn.example; v=1")
        #expect(members.dropFirst().allSatisfy { $0.hasPrefix("tollgate-") && $0.count == 17 })
        #expect(Set(members.dropFirst()).count == 2)
        await a.shutdown(gracePeriod: .seconds(1))
        await b.shutdown(gracePeriod: .seconds(1))
    }

    @Test("A member is matched as a whole, without case, parameters aside")
    func matching() {
        let fields: HeaderFields = ["CDN-Loop": "foo, Tollgate-0a1b2c3d; v=2", "cdn-loop": "bar"]
        #expect(CDNLoop.names("tollgate-0a1b2c3d", in: fields))
        #expect(CDNLoop.names("bar", in: fields))
        #expect(!CDNLoop.names("tollgate-0a1b2c3", in: fields))
        #expect(!CDNLoop.names("tollgate-0a1b2c3d", in: ["Via": "1.1 tollgate-0a1b2c3d"]))
    }
}
