import Foundation
import NIOCore
import Testing
import TollgateHTTP
import TollgateProxy
import TollgateTesting

@Suite("Forward proxy: requests, targets and headers", .timeLimit(.minutes(1)))
struct ForwardProxyTests {
    @Test("curl through the proxy gets the origin's body; the origin sees origin-form, Via, and no hop-by-hop fields")
    func curlThroughProxy() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, headers: ["Content-Type": "text/plain"], body: "hello from \(request.path)")
        }
        defer { origin.stop() }
        try await withProxy { proxy in
            let result = try await ChildProcess.run(
                "/usr/bin/curl",
                [
                    "-s", "--noproxy", "", "-x", "http://127.0.0.1:\(proxy.port)",
                    "-H", "Proxy-Connection: keep-alive",
                    "-H", "Proxy-Authorization: Basic c2VjcmV0OnNlY3JldA==",
                    "-H", "Connection: X-Hop",
                    "-H", "X-Hop: drop me",
                    "-H", "X-End-To-End: keep me",
                    "http://127.0.0.1:\(origin.port)/path?q=1",
                ]
            )
            #expect(result.status == 0, "curl failed: \(result.stderr)")
            #expect(result.stdout == "hello from /path")
            let received = try #require(origin.requests.first)
            #expect(origin.requestCount == 1)
            #expect(received.target == "/path?q=1")
            #expect(received.headerFields["Host"] == "127.0.0.1:\(origin.port)")
            #expect(received.headerFields.values(for: "Via") == ["1.1 tollgate"])
            #expect(received.headerFields["Proxy-Connection"] == nil)
            #expect(received.headerFields["Proxy-Authorization"] == nil)
            #expect(received.headerFields["X-Hop"] == nil)
            #expect(received.headerFields["Connection"] == nil)
            #expect(received.headerFields["X-End-To-End"] == "keep me")
            #expect(received.headerFields["User-Agent"]?.hasPrefix("curl/") == true)

            try await eventually("the access log line") { !proxy.accessLog.isEmpty }
            let line = try #require(proxy.accessLog.first)
            let pattern =
                #/^127\.0\.0\.1 - - \[\d{2}/[A-Z][a-z]{2}/\d{4}:\d{2}:\d{2}:\d{2} [+-]\d{4}\] "GET http://127\.0\.0\.1:\d+/path\?q=1 HTTP/1\.1" 200 16 "-" "curl/[^"]+" "-" "default"$/#
            #expect(line.wholeMatch(of: pattern) != nil, "access log line: \(line)")
            #expect(!line.contains("c2VjcmV0"))
        }
    }

    @Test("Two pipelined requests on one connection get two responses, in request order")
    func pipelinedRequests() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in
            // The first answer is the slow one: out-of-order delivery would show.
            if request.path == "/first" {
                respond.after(.milliseconds(300)) { respond.send(status: 200, body: "first") }
            } else {
                respond.send(status: 200, body: "second")
            }
        }
        defer { origin.stop() }
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            let host = "127.0.0.1:\(origin.port)"
            try await client.send(
                "GET http://\(host)/first HTTP/1.1\r\nHost: \(host)\r\n\r\n"
                    + "GET http://\(host)/second HTTP/1.1\r\nHost: \(host)\r\n\r\n"
            )
            let responses = try await client.waitForResponses(2)
            #expect(responses.count == 2)
            #expect(responses.map(\.status) == [200, 200])
            #expect(responses.map(\.bodyText) == ["first", "second"])
            #expect(responses.allSatisfy { $0.headers("Via") == ["1.1 tollgate"] })
            #expect(!client.isClosed)
        }
    }

    @Test("Pipelined responses of growing and shrinking sizes, length-framed and chunked, each arrive whole")
    func pipelinedResponsesOfManySizes() async throws {
        // Response buffers are reused from one response to the next on a connection: a body that
        // leaked from one response into another, or a head written over one not yet sent, shows here.
        let sizes = [0, 10, 1024, 9000, 17, 20_000, 3, 8000, 16 * 1024, 1, 700]
        @Sendable func body(_ size: Int, _ seed: Int) -> String {
            String((0..<size).map { Character(UnicodeScalar(UInt8(97 + ($0 + seed) % 26))) })
        }
        let origin = try await LoopbackOrigin.start { request, respond in
            let parts = request.path.dropFirst().split(separator: "-")
            let index = Int(parts[0])!, size = Int(parts[1])!
            let headers: HeaderFields = index % 3 == 2 ? ["Transfer-Encoding": "chunked"] : [:]
            respond.send(status: 200, headers: headers, body: body(size, index))
        }
        defer { origin.stop() }
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            let host = "127.0.0.1:\(origin.port)"
            let requests = sizes.enumerated().map { index, size in
                "GET http://\(host)/\(index)-\(size) HTTP/1.1\r\nHost: \(host)\r\n\r\n"
            }
            try await client.send(requests.joined())
            let responses = try await client.waitForResponses(sizes.count)
            #expect(responses.map(\.status) == Array(repeating: 200, count: sizes.count))
            for (index, size) in sizes.enumerated() {
                #expect(responses[index].bodyText == body(size, index), "response \(index) (\(size) bytes)")
            }
            // And once more, one at a time on the same connection.
            for (index, size) in sizes.enumerated().reversed() {
                try await client.send(requests[index])
                let response = try #require(try await client.waitForResponses(sizes.count * 2 - index).last)
                #expect(response.bodyText == body(size, index), "response \(index) (\(size) bytes), again")
            }
        }
    }

    @Test("Spellings of one address in turn on one connection each reach the origin under its canonical form")
    func canonicalHostPerRequest() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, body: request.headerFields["Host"] ?? "-")
        }
        defer { origin.stop() }
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            let spellings = ["127.0.0.1", "127.1", "127.1", "0x7f000001", "127.0.0.1", "2130706433"]
            for (index, spelling) in spellings.enumerated() {
                try await client.send("GET http://\(spelling):\(origin.port)/ HTTP/1.1\r\nHost: x\r\n\r\n")
                let response = try #require(try await client.waitForResponses(index + 1).last)
                #expect(response.bodyText == "127.0.0.1:\(origin.port)", "\(spelling)")
            }
        }
    }

    @Test("An origin-form request gets 400 with Tollgate-Error: bad-request, and the connection stays usable")
    func originFormIsRefused() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "ok") }
        defer { origin.stop() }
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            try await client.send("GET /path HTTP/1.1\r\nHost: 127.0.0.1:\(origin.port)\r\n\r\n")
            let refused = try #require(try await client.waitForResponses(1).first)
            #expect(refused.status == 400)
            #expect(refused.header("Tollgate-Error") == "bad-request")
            #expect(refused.header("Content-Type") == "text/plain")
            #expect(refused.bodyText.hasSuffix("\n"))
            #expect(refused.bodyText.filter { $0 == "\n" }.count == 1)
            #expect(origin.requestCount == 0)

            try await client.send("GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\n\r\n")
            let responses = try await client.waitForResponses(2)
            #expect(responses.last?.status == 200)
            #expect(responses.last?.bodyText == "ok")
        }
    }

    @Test(
        "An https:// target is loaded over TLS by the session: an untrusted certificate gives 502 upstream-tls-untrusted",
        .enabled(if: TLSTestServer.isAvailable)
    )
    func httpsTargetWithUntrustedCertificate() async throws {
        let tls = try await TLSTestServer.start()
        defer { tls.stop() }
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            try await client.send("GET https://127.0.0.1:\(tls.port)/ HTTP/1.1\r\nHost: x\r\n\r\n")
            let response = try #require(try await client.waitForResponses(1).first)
            #expect(response.status == 502)
            #expect(response.header("Tollgate-Error") == "upstream-tls-untrusted")
            #expect(response.bodyText.filter { $0 == "\n" }.count == 1)
        }
    }

    @Test("A target the URL parser refuses gets 400 with the parser's message")
    func badURLIsRefused() async throws {
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            try await client.send("GET http://user@127.0.0.1:1/ HTTP/1.1\r\nHost: x\r\n\r\n")
            let response = try #require(try await client.waitForResponses(1).first)
            #expect(response.status == 400)
            #expect(response.header("Tollgate-Error") == "bad-request")
            #expect(response.bodyText.contains("userinfo"))
        }
    }

    @Test("A request with Connection: close is answered with Connection: close and the connection is closed")
    func connectionClose() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "bye") }
        defer { origin.stop() }
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            try await client.send(
                "GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            )
            try await client.waitForClose()
            let response = try #require(client.responses.first)
            #expect(response.status == 200)
            #expect(response.bodyText == "bye")
            #expect(response.header("Connection") == "close")
        }
    }

    @Test("Hop-by-hop fields of the origin's response are dropped and Via is added; a body without length is chunked")
    func responseHeaders() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.sendHead(
                status: 200,
                headers: [
                    "Transfer-Encoding": "chunked", "Keep-Alive": "timeout=5", "Connection": "X-Origin-Hop",
                    "X-Origin-Hop": "1", "ETag": "\"v1\"",
                ]
            )
            respond.writeChunk("abc")
            respond.after(.milliseconds(50)) {
                respond.writeChunk("def")
                respond.endChunked()
            }
        }
        defer { origin.stop() }
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            try await client.send("GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\n\r\n")
            let response = try #require(try await client.waitForResponses(1).first)
            #expect(response.status == 200)
            #expect(response.bodyText == "abcdef")
            #expect(response.header("Transfer-Encoding") == "chunked")
            #expect(response.header("Keep-Alive") == nil)
            #expect(response.header("X-Origin-Hop") == nil)
            #expect(response.header("Connection") == nil)
            #expect(response.header("ETag") == "\"v1\"")
            #expect(response.headers("Via") == ["1.1 tollgate"])
        }
    }

    @Test(
        "Fixed hop-by-hop fields are left out of a length-framed response; one Connection names goes, framing and all",
        arguments: [false, true]
    )
    func responseHopByHopWithLength(connectionNamesLength: Bool) async throws {
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.sendHead(
                status: 200,
                headers: [
                    "Connection": connectionNamesLength ? "keep-alive, Content-Length" : "keep-alive",
                    "Keep-Alive": "timeout=5", "Content-Length": "6", "Proxy-Authenticate": "Basic", "ETag": "\"v2\"",
                ]
            )
            respond.write("abcdef")
        }
        defer { origin.stop() }
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            // Two requests on one connection: the first response's framing must be right for
            // the second to be read at all.
            try await client.send(
                "GET http://127.0.0.1:\(origin.port)/a HTTP/1.1\r\nHost: x\r\n\r\n"
                    + "GET http://127.0.0.1:\(origin.port)/b HTTP/1.1\r\nHost: x\r\n\r\n"
            )
            let responses = try await client.waitForResponses(2)
            #expect(responses.count == 2)
            for response in responses {
                #expect(response.status == 200)
                #expect(response.bodyText == "abcdef")
                #expect(response.header("Keep-Alive") == nil)
                #expect(response.header("Proxy-Authenticate") == nil)
                #expect(response.header("Connection") == nil)
                #expect(response.header("ETag") == "\"v2\"")
                #expect(response.headers("Via") == ["1.1 tollgate"])
                if connectionNamesLength {
                    // Content-Length was the origin's connection's business: the length is
                    // unknown to the client, which gets the body chunked.
                    #expect(response.header("Content-Length") == nil)
                    #expect(response.header("Transfer-Encoding") == "chunked")
                } else {
                    #expect(response.headers("Content-Length") == ["6"])
                }
            }
        }
    }

    @Test("A redirect is passed to the client, not followed")
    func redirectIsPassedThrough() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in
            if request.path == "/old" {
                respond.send(status: 302, headers: ["Location": "/new"], body: "moved")
            } else {
                respond.send(status: 200, body: "new")
            }
        }
        defer { origin.stop() }
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            try await client.send("GET http://127.0.0.1:\(origin.port)/old HTTP/1.1\r\nHost: x\r\n\r\n")
            let response = try #require(try await client.waitForResponses(1).first)
            #expect(response.status == 302)
            #expect(response.header("Location") == "/new")
            #expect(response.bodyText == "moved")
            #expect(origin.requests.map(\.path) == ["/old"])
        }
    }
}
