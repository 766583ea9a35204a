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
