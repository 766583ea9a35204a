import Foundation
import NIOCore
import Testing
import TollgateHTTP
import TollgateProxy
import TollgateTesting

@Suite("Reverse (gateway) listeners", .timeLimit(.minutes(1)))
struct ReverseProxyTests {
    private func echoOrigin() async throws -> LoopbackOrigin {
        try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, body: "\(request.method) \(request.target)")
        }
    }

    @Test("An origin-form request goes to the upstream with Host rewritten, Via and X-Forwarded-For added")
    func originForm() async throws {
        let origin = try await echoOrigin()
        defer { origin.stop() }
        try await withProxy(mode: .reverse(upstream: origin.url())) { proxy in
            let result = try await ChildProcess.run(
                "/usr/bin/curl",
                ["-sS", "--noproxy", "*", "-H", "Host: public.example", "http://127.0.0.1:\(proxy.port)/a/b?c=d"]
            )
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout == "GET /a/b?c=d")
            let received = try #require(origin.requests.first)
            #expect(received.headerFields["Host"] == "127.0.0.1:\(origin.port)")
            #expect(received.headerFields.values(for: "Via") == ["1.1 tollgate"])
            #expect(received.headerFields["X-Forwarded-For"] == "127.0.0.1")
            #expect(received.headerFields["X-Forwarded-Host"] == "public.example")
        }
    }

    @Test("On one kept-alive connection each request gets its own Via and X-Forwarded-* lines (Host, version, client-sent fields)")
    func forwardingLinesPerRequest() async throws {
        let origin = try await echoOrigin()
        defer { origin.stop() }
        try await withProxy(mode: .reverse(upstream: origin.url())) { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            let requests = [
                "GET /1 HTTP/1.1\r\nHost: a.example\r\n\r\n",
                "GET /2 HTTP/1.1\r\nHost: a.example\r\n\r\n",
                "GET /3 HTTP/1.1\r\nHost: b.example\r\n\r\n",
                "GET /4 HTTP/1.1\r\nHost: b.example\r\nX-Forwarded-For: 192.0.2.7\r\n\r\n",
                "GET /5 HTTP/1.1\r\nHost: b.example\r\n\r\n",
                "GET /6 HTTP/1.0\r\nHost: b.example\r\nConnection: keep-alive\r\n\r\n",
            ]
            for (index, text) in requests.enumerated() {
                try await client.send(text)
                try await client.waitForResponses(index + 1)
            }
            let received = origin.requests.map(\.headerFields)
            try #require(received.count == requests.count)
            #expect(received.map { $0["X-Forwarded-Host"] } == ["a.example", "a.example", "b.example", "b.example", "b.example", "b.example"])
            // The client is no trusted forwarder: its own X-Forwarded-For is replaced, not appended to.
            #expect(received.map { $0["X-Forwarded-For"] } == Array(repeating: "127.0.0.1", count: 6))
            #expect(received.map { $0.values(for: "Via") } == Array(repeating: ["1.1 tollgate"], count: 5) + [["1.0 tollgate"]])
            #expect(received.allSatisfy { $0.values(for: "X-Forwarded-Proto") == ["http"] })
            #expect(received.allSatisfy { $0.values(for: "X-Forwarded-Host").count == 1 && $0.values(for: "X-Forwarded-For").count == 1 })
        }
    }

    @Test("The upstream's path is a prefix; keep-alive serves several requests; a POST body goes through")
    func pathPrefixAndKeepAlive() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, body: "\(request.method) \(request.target) \(request.bodyText)")
        }
        defer { origin.stop() }
        let upstream = try #require(HTTPURL(string: "http://127.0.0.1:\(origin.port)/api/"))
        try await withProxy(mode: .reverse(upstream: upstream)) { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            try await client.send("GET /v1/items HTTP/1.1\r\nHost: gw\r\n\r\n")
            try await client.waitForResponses(1)
            try await client.send("POST /v1/items HTTP/1.1\r\nHost: gw\r\nContent-Length: 4\r\n\r\nbody")
            let responses = try await client.waitForResponses(2)
            #expect(responses.map(\.bodyText) == ["GET /api/v1/items ", "POST /api/v1/items body"])
            #expect(!client.isClosed)
        }
    }

    @Test("CONNECT to a reverse listener gets 405; an absolute-form request uses only its path")
    func connectAndAbsoluteForm() async throws {
        let origin = try await echoOrigin()
        defer { origin.stop() }
        try await withProxy(mode: .reverse(upstream: origin.url())) { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            try await client.send("GET http://elsewhere.example/x HTTP/1.1\r\nHost: elsewhere.example\r\n\r\n")
            #expect(try await client.waitForResponses(1).first?.bodyText == "GET /x")
            let tunnel = try await RawClient.connect(port: proxy.port)
            defer { tunnel.close() }
            try await tunnel.send("CONNECT 127.0.0.1:443 HTTP/1.1\r\nHost: x\r\n\r\n")
            try await tunnel.waitForClose()
            #expect(tunnel.responses.first?.status == 405)
            #expect(tunnel.responses.first?.header("Tollgate-Error") == "bad-request")
        }
    }
}
