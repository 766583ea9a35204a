import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing
import TollgateHTTP
import TollgatePolicy
import TollgateProxy
import TollgateSession
import TollgateTesting

@Suite("Access control: clients and destinations, end to end", .timeLimit(.minutes(1)))
struct AccessControlTests {
    @Test("A client outside access.clients gets 403 client-denied and nothing is forwarded")
    func clientDenied() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "ok") }
        defer { origin.stop() }
        var configuration = PolicyConfiguration()
        configuration.access.clients = [CIDR("10.0.0.0/8")!]
        try await withProxy(configuration: configuration) { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            try await client.send("GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\n\r\n")
            try await client.waitForClose()
            let response = try #require(client.responses.first)
            #expect(response.status == 403)
            #expect(response.header("Tollgate-Error") == "client-denied")
            #expect(origin.requestCount == 0)
            #expect(proxy.accessLog.first?.contains("\"GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\" 403 ") == true)
        }
    }

    static let spellings = [
        "127.0.0.1", "2130706433", "0x7f000001", "0177.0.0.1", "127.1", "0x7f.1", "127.0.0.1.", "%31%32%37.0.0.1",
        "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "LOCALHOST", "localhost.",
    ]

    @Test("A request to the proxy itself is denied however the address is spelled (no loops)", arguments: spellings)
    func ownListenerDenied(_ spelling: String) async throws {
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            try await client.send("GET http://\(spelling):\(proxy.port)/ HTTP/1.1\r\nHost: x\r\n\r\n")
            let response = try #require(try await client.waitForResponses(1).first)
            #expect(response.status == 403, "\(spelling)")
            #expect(response.header("Tollgate-Error") == "host-denied")
            #expect(response.bodyText.contains("own listener"))
            #expect(proxy.accessLog.count <= 1, "the request went through the proxy twice")
        }
    }

    @Test("A deny rule on 127.0.0.0/8 holds for every spelling, and the origin sees nothing", arguments: spellings)
    func denyRuleEverySpelling(_ spelling: String) async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "ok") }
        defer { origin.stop() }
        var configuration = PolicyConfiguration()
        configuration.access.destinations = [
            .init(.deny, .network(CIDR("127.0.0.0/8")!, port: nil)), .init(.allow, .all),
        ]
        try await withProxy(configuration: configuration) { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            try await client.send("GET http://\(spelling):\(origin.port)/ HTTP/1.1\r\nHost: x\r\n\r\n")
            let response = try #require(try await client.waitForResponses(1).first)
            #expect(response.status == 403, "\(spelling)")
            #expect(response.header("Tollgate-Error") == "host-denied")
            #expect(origin.requestCount == 0)
        }
    }

    @Test("An allowed odd spelling reaches the origin under its canonical name")
    func canonicalHostIsUsed() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "ok") }
        defer { origin.stop() }
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            try await client.send("GET http://0x7f000001:\(origin.port)/x HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try await client.waitForResponses(1).first?.status == 200)
            #expect(origin.requests.first?.headerFields["Host"] == "127.0.0.1:\(origin.port)")
        }
    }

    @Test(
        "URL-parser confusions are refused with 400",
        arguments: [
            "http://user:pass@127.0.0.1:{PORT}/", "http://127.0.0.1:{PORT}@evil.example/",
            "http://127.0.0.1:{PORT}\\@evil.example/",
            "http://1.2.3.4.5:{PORT}/", "http://[::1%25lo]:{PORT}/", "http://256.0.0.1:{PORT}/",
        ]
    )
    func parserConfusions(_ template: String) async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "ok") }
        defer { origin.stop() }
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            let target = template.replacingOccurrences(of: "{PORT}", with: String(origin.port))
            try await client.send("GET \(target) HTTP/1.1\r\nHost: x\r\n\r\n")
            let response = try #require(try await client.waitForResponses(1).first)
            #expect(response.status == 400, "\(target)")
            #expect(response.header("Tollgate-Error") == "bad-request")
            #expect(origin.requestCount == 0)
        }
    }

    @Test("The link-local metadata address is denied by default, in any spelling; nothing is connected")
    func linkLocal() async throws {
        try await withProxy { proxy in
            for spelling in ["169.254.169.254", "2852039166", "0xa9.0xfe.0xa9.0xfe", "[::ffff:a9fe:a9fe]"] {
                let client = try await RawClient.connect(port: proxy.port)
                defer { client.close() }
                let started = ContinuousClock.now
                try await client.send("GET http://\(spelling)/latest/meta-data/ HTTP/1.1\r\nHost: x\r\n\r\n")
                let response = try #require(try await client.waitForResponses(1).first)
                #expect(response.status == 403, "\(spelling)")
                #expect(response.header("Tollgate-Error") == "host-denied")
                #expect(ContinuousClock.now - started < .seconds(1), "no connection is attempted")
            }
        }
    }

    @Test("A host rule that denies (route.isDenied) gets 403 host-denied, logged with the rule and session")
    func hostRuleDenied() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "ok") }
        defer { origin.stop() }
        let session = Session(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let policy = DenyingPolicy(session: session, deniedPort: origin.port)
        let log = LockedLines()
        let server = try await ProxyServer.start(
            .init(listen: ListenAddress(host: "127.0.0.1", port: 0), accessLog: AccessLog { log.append($0) }),
            policy: policy
        )
        let client = try await RawClient.connect(port: server.boundAddress.port)
        defer { client.close() }
        try await client.send("GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\n\r\n")
        let response = try #require(try await client.waitForResponses(1).first)
        await server.shutdown(gracePeriod: .seconds(1))
        #expect(response.status == 403)
        #expect(response.header("Tollgate-Error") == "host-denied")
        #expect(response.bodyText.contains("hosts[0]:denied.example"))
        #expect(origin.requestCount == 0)
        #expect(log.lines.first?.hasSuffix("\"hosts[0]:denied.example\" \"locked\"") == true, "\(log.lines)")
    }

    @Test("A redirect followed by the session to a denied destination is not given to the client")
    func followedRedirectIsChecked() async throws {
        let proxyPort = NIOLockedValueBox(0)
        let origin = try await LoopbackOrigin.start { _, respond in
            // Points back at the proxy: the session follows (no delegate answers), the proxy denies.
            respond.send(
                status: 302,
                headers: ["Location": "http://127.0.0.1:\(proxyPort.withLockedValue { $0 })/loop"],
                body: ""
            )
        }
        defer { origin.stop() }
        let following = Session(configuration: .ephemeral)
        defer { following.invalidateAndCancel() }
        let server = try await ProxyServer.start(
            .init(listen: ListenAddress(host: "127.0.0.1", port: 0), accessLog: .off),
            policy: StaticProxyPolicy(session: following)
        )
        proxyPort.withLockedValue { $0 = server.boundAddress.port }
        let client = try await RawClient.connect(port: server.boundAddress.port)
        defer { client.close() }
        try await client.send("GET http://127.0.0.1:\(origin.port)/start HTTP/1.1\r\nHost: x\r\n\r\n")
        let response = try #require(try await client.waitForResponses(1).first)
        await server.shutdown(gracePeriod: .seconds(1))
        #expect(response.status == 403)
        #expect(response.header("Tollgate-Error") == "host-denied")
        #expect(response.bodyText.contains("redirect"))
    }
}

extension AccessControlTests {
    @Test("A redirect the session would follow to a denied address is never sent: 403, and that origin sees nothing")
    func followedRedirectNotSentToDeniedAddress() async throws {
        let inside = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "internal") }
        defer { inside.stop() }
        let outside = try await LoopbackOrigin.start { _, respond in
            respond.send(status: 302, headers: ["Location": "http://127.0.0.1:\(inside.port)/secret"], body: "")
        }
        defer { outside.stop() }
        var configuration = PolicyConfiguration()
        configuration.access.destinations = [
            .init(.deny, .network(CIDR("127.0.0.1/32")!, port: inside.port)), .init(.allow, .all),
        ]
        let following = Session(configuration: .ephemeral)  // no delegate: redirects are followed
        defer { following.invalidateAndCancel() }
        let server = try await ProxyServer.start(
            .init(listen: ListenAddress(host: "127.0.0.1", port: 0), accessLog: .off),
            policy: StaticProxyPolicy(session: following, configuration: configuration)
        )
        let client = try await RawClient.connect(port: server.boundAddress.port)
        defer { client.close() }
        try await client.send("GET http://127.0.0.1:\(outside.port)/start HTTP/1.1\r\nHost: x\r\n\r\n")
        let response = try #require(try await client.waitForResponses(1).first)
        await server.shutdown(gracePeriod: .seconds(1))
        #expect(response.status == 403)
        #expect(response.header("Tollgate-Error") == "host-denied")
        #expect(response.bodyText.contains("a redirect to 127.0.0.1:\(inside.port)"), "\(response.bodyText)")
        #expect(outside.requestCount == 1)
        #expect(inside.requestCount == 0)
    }
}

/// Denies requests to one port, as a host rule with `trust.deny: true` would.
private struct DenyingPolicy: ProxyPolicy {
    let session: Session
    let deniedPort: Int
    var configuration: PolicyConfiguration { PolicyConfiguration() }
    func proxyRoute(for url: HTTPURL) -> ProxyRoute {
        ProxyRoute(
            session: session,
            sessionName: "locked",
            isDenied: url.effectivePort == deniedPort,
            ruleLabel: "hosts[0]:denied.example"
        )
    }
}
