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
    let configuration: PolicyConfiguration
    private let session = NIOLockedValueBox<Session?>(nil)

    init(connectPorts: [Int] = [443]) {
        var configuration = PolicyConfiguration()
        configuration.access.connectPorts = connectPorts
        self.configuration = configuration
    }

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
    private func start(_ policy: LaterSessionPolicy, log: NIOLockedValueBox<[String]> = NIOLockedValueBox([])) async throws -> ProxyServer {
        try await ProxyServer.start(
            ProxyServer.Configuration(
                listen: ListenAddress(host: "127.0.0.1", port: 0),
                accessLog: AccessLog(format: .combined) { line in log.withLockedValue { $0.append(line) } }
            ),
            policy: policy
        )
    }

    @Test("A CONNECT between two proxies that are each other's parent ends at the first proxy it comes back to (508), not in a ring of tunnels")
    func connectLoop() async throws {
        let echo = try await LoopbackEchoServer.start()
        defer { echo.stop() }
        let (first, second) = (LaterSessionPolicy(connectPorts: [echo.port]), LaterSessionPolicy(connectPorts: [echo.port]))
        let (firstLog, secondLog) = (NIOLockedValueBox<[String]>([]), NIOLockedValueBox<[String]>([]))
        let a = try await start(first, log: firstLog)
        let b = try await start(second, log: secondLog)
        first.makeSession(parent: b.boundAddress.port)
        second.makeSession(parent: a.boundAddress.port)
        defer { first.stop(); second.stop() }

        let response = try await request("CONNECT 127.0.0.1:\(echo.port) HTTP/1.1\r\nHost: 127.0.0.1:\(echo.port)\r\n\r\n", port: a.boundAddress.port)
        // The client's answer: the loop, relayed by each proxy on the way back (the parent's own
        // parent said 508 to its CONNECT), as a request's 508 would be.
        #expect(response.status == 508)
        #expect(response.header("Tollgate-Error") == "forwarding-loop")
        #expect(response.bodyText.contains("the upstream proxy refused CONNECT"), "\(response.bodyText)")
        #expect(response.bodyText.contains("508 Loop Detected"), "\(response.bodyText)")
        try await eventually("the 508 relayed in the second proxy's log") {
            secondLog.withLockedValue { $0.contains { $0.contains("\"CONNECT 127.0.0.1:\(echo.port) HTTP/1.1\" 508") } }
        }
        try await eventually("the loop's 508 in the first proxy's log") {
            firstLog.withLockedValue { $0.contains { $0.contains("\"CONNECT 127.0.0.1:\(echo.port) HTTP/1.1\" 508") } }
        }
        // One CONNECT each way and the one that came back: no ring.
        #expect(firstLog.withLockedValue { $0.filter { $0.contains("CONNECT") }.count } <= 2)
        #expect(secondLog.withLockedValue { $0.filter { $0.contains("CONNECT") }.count } <= 1)
        await a.shutdown(gracePeriod: .seconds(1))
        await b.shutdown(gracePeriod: .seconds(1))
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
