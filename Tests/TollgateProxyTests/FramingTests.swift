import Foundation
import NIOCore
import Testing
import TollgateHTTP
import TollgateProxy
import TollgateTesting

@Suite("HTTP/1.1 framing: HEAD, 1xx, 204, 304, keep-alive, pipelining", .timeLimit(.minutes(1)))
struct FramingTests {
    @Test("HEAD answered with a chunked head gets no body, and the next request on the connection is served")
    func headWithChunkedOrigin() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in
            if request.method == "HEAD" {
                respond.sendHead(status: 200, headers: ["Transfer-Encoding": "chunked", "ETag": "\"h\""])
            } else {
                respond.send(status: 200, body: "after")
            }
        }
        defer { origin.stop() }
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            let url = "http://127.0.0.1:\(origin.port)/"
            try await client.send("HEAD \(url) HTTP/1.1\r\nHost: x\r\n\r\nGET \(url) HTTP/1.1\r\nHost: x\r\n\r\n")
            try await client.waitUntil("both responses", timeout: .seconds(10)) { $0.text.hasSuffix("after") }
            let parts = client.text.components(separatedBy: "HTTP/1.1 200")
            #expect(parts.count == 3)
            let headResponse = parts[1]
            #expect(
                headResponse.hasSuffix("\r\n\r\n"),
                "no body after the HEAD response: \(headResponse.debugDescription)"
            )
            #expect(!headResponse.lowercased().contains("transfer-encoding"))
            #expect(headResponse.contains("ETag: \"h\""))
        }
    }

    @Test("Bodies of known length from empty to past the size sent in the head's buffer arrive whole, in order")
    func knownLengthBodiesAroundTheCoalescingSize() async throws {
        // 16 KiB is the largest body written in one buffer with its head (ClientConnectionHandler).
        let sizes = [0, 1, 1024, 16 * 1024 - 1, 16 * 1024, 16 * 1024 + 1, 200 * 1024]
        @Sendable func body(_ size: Int) -> [UInt8] { (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ size) } }
        let origin = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, headers: ["X-Size": String(request.path.dropFirst())], bytes: body(Int(request.path.dropFirst())!))
        }
        defer { origin.stop() }
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            // Pipelined: each response must end exactly where its Content-Length says.
            try await client.send(sizes.map { "GET http://127.0.0.1:\(origin.port)/\($0) HTTP/1.1\r\nHost: x\r\n\r\n" }.joined())
            let responses = try await client.waitForResponses(sizes.count)
            #expect(responses.map { $0.header("X-Size") } == sizes.map { String($0) })
            for (response, size) in zip(responses, sizes) {
                #expect(response.header("Content-Length") == String(size))
                #expect(response.body == body(size), "body of \(size) bytes")
            }
            #expect(RawResponse.parseAll(client.received).rest.isEmpty)
            #expect(!client.isClosed)
        }
    }

    @Test("204 and 304 carry no body and keep the connection; a 103 from the origin is relayed before its 200")
    func noBodyStatuses() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in
            switch request.path {
            case "/204": respond.write("HTTP/1.1 204 No Content\r\nX-A: 1\r\n\r\n")
            case "/304": respond.write("HTTP/1.1 304 Not Modified\r\nETag: \"v\"\r\n\r\n")
            default:
                respond.write(
                    "HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ndone"
                )
            }
        }
        defer { origin.stop() }
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            let url = "http://127.0.0.1:\(origin.port)"
            for path in ["/204", "/304", "/103"] {
                try await client.send("GET \(url)\(path) HTTP/1.1\r\nHost: x\r\nIf-None-Match: \"v\"\r\n\r\n")
            }
            let responses = try await client.waitForResponses(4)
            #expect(responses.map(\.status) == [204, 304, 103, 200])
            #expect(responses[0].header("Content-Length") == nil)
            #expect(responses[0].header("Transfer-Encoding") == nil)
            #expect(responses[1].header("ETag") == "\"v\"")
            #expect(responses[1].header("Transfer-Encoding") == nil)
            #expect(responses[2].header("Link") == "</a.css>")
            #expect(responses[3].header("Link") == nil)
            #expect(responses[3].bodyText == "done")
            #expect(RawResponse.parseAll(client.received).rest.isEmpty)
            #expect(!client.isClosed)
        }
    }

    @Test("Keep-alive: sequential requests share one client connection and one origin connection")
    func keepAlive() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in respond.send(status: 200, body: request.path)
        }
        defer { origin.stop() }
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            for index in 1...5 {
                try await client.send("GET http://127.0.0.1:\(origin.port)/\(index) HTTP/1.1\r\nHost: x\r\n\r\n")
                try await client.waitForResponses(index)
            }
            #expect(client.responses.map(\.bodyText) == ["/1", "/2", "/3", "/4", "/5"])
            #expect(origin.connectionCount == 1)
            #expect(!client.isClosed)
        }
    }

    @Test("An HTTP/1.0 client asking for keep-alive gets it when the length is known")
    func http10KeepAlive() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "ten bytes!") }
        defer { origin.stop() }
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            let request = "GET http://127.0.0.1:\(origin.port)/ HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
            try await client.send(request)
            try await client.waitForResponses(1)
            try await client.send(request)
            let responses = try await client.waitForResponses(2)
            #expect(responses.allSatisfy { $0.header("Connection") == "keep-alive" })
            #expect(client.text.hasPrefix("HTTP/1.0 200"))
            #expect(!client.isClosed)
        }
    }

    @Test("Three pipelined requests, the middle one with a body, are answered in order")
    func pipelinedWithBody() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in
            let delay: TimeAmount = request.path == "/1" ? .milliseconds(200) : .zero
            respond.after(delay) { respond.send(status: 200, body: "\(request.path):\(request.bodyText)") }
        }
        defer { origin.stop() }
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            let url = "http://127.0.0.1:\(origin.port)"
            try await client.send(
                "GET \(url)/1 HTTP/1.1\r\nHost: x\r\n\r\n"
                    + "POST \(url)/2 HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nbody"
                    + "GET \(url)/3 HTTP/1.1\r\nHost: x\r\n\r\n"
            )
            let responses = try await client.waitForResponses(3)
            #expect(responses.map(\.bodyText) == ["/1:", "/2:body", "/3:"])
        }
    }

    @Test("A denied request with Expect: 100-continue gets the 403 and no 100 Continue")
    func deniedExpectation() async throws {
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            try await client.send(
                "PUT http://169.254.169.254/x HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"
            )
            try await client.waitForClose()
            #expect(client.responses.map(\.status) == [403])
        }
    }

    @Test("A large response streams through intact with chunked framing added for an unknown length")
    func largeChunkedResponse() async throws {
        let piece = String(repeating: "0123456789abcdef", count: 4096)  // 64 KiB
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.sendHead(status: 200, headers: ["Connection": "close"])
            for _ in 0..<16 { respond.write(piece) }
            respond.after(.milliseconds(20)) { respond.close() }
        }
        defer { origin.stop() }
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            try await client.send("GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\n\r\n")
            let response = try #require(try await client.waitForResponses(1, timeout: .seconds(20)).first)
            #expect(response.header("Transfer-Encoding") == "chunked")
            #expect(response.body.count == 16 * piece.utf8.count)
            #expect(!client.isClosed)
        }
    }
}
