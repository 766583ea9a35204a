import Foundation
import NIOCore
import Testing
import TollgateHTTP
import TollgateProxy
import TollgateTesting

@Suite("Forward proxy: the client connection", .timeLimit(.minutes(1)))
struct ClientConnectionTests {
    @Test("Expect: 100-continue is answered by the proxy, and the origin does not see Expect")
    func expectContinue() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 201, body: "stored \(request.bodyText)")
        }
        defer { origin.stop() }
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            try await client.send(
                "PUT http://127.0.0.1:\(origin.port)/doc HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"
            )
            let interim = try #require(try await client.waitForResponses(1).first)
            #expect(interim.status == 100)
            #expect(origin.requestCount == 0)
            try await client.send("hello")
            let responses = try await client.waitForResponses(2)
            #expect(responses.last?.status == 201)
            #expect(responses.last?.bodyText == "stored hello")
            let received = try #require(origin.requests.first)
            #expect(received.headerFields["Expect"] == nil)
        }
    }

    @Test("HEAD gets the origin's head without a body, and the connection serves the next request")
    func headRequest() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, body: request.method == "HEAD" ? "12345" : "body!")
        }
        defer { origin.stop() }
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            try await client.send("HEAD http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\n\r\n")
            try await client.waitUntil("the HEAD response", timeout: .seconds(10)) { $0.text.contains("\r\n\r\n") }
            #expect(client.text.hasPrefix("HTTP/1.1 200"))
            #expect(client.text.contains("Content-Length: 5\r\n"))
            #expect(client.text.hasSuffix("\r\n\r\n"))
            try await client.send("GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\n\r\n")
            try await client.waitUntil("the GET response", timeout: .seconds(10)) { $0.text.hasSuffix("body!") }
            #expect(client.text.components(separatedBy: "HTTP/1.1 200").count == 3)
        }
    }

    @Test("An HTTP/1.0 client gets an HTTP/1.0 response; without a length the body ends with the close")
    func http10Client() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.sendHead(status: 200, headers: ["Transfer-Encoding": "chunked"])
            respond.writeChunk("ten bytes!")
            respond.endChunked()
        }
        defer { origin.stop() }
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            try await client.send("GET http://127.0.0.1:\(origin.port)/ HTTP/1.0\r\n\r\n")
            try await client.waitForClose()
            let text = client.text
            #expect(text.hasPrefix("HTTP/1.0 200"))
            #expect(!text.lowercased().contains("transfer-encoding"))
            #expect(text.hasSuffix("\r\n\r\nten bytes!"))
            let received = try #require(origin.requests.first)
            #expect(received.headerFields.values(for: "Via") == ["1.0 tollgate"])
        }
    }

    @Test("Garbage instead of a request gets 400 with Tollgate-Error: bad-request, then the connection closes")
    func unparsableRequest() async throws {
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            try await client.send("NOT HTTP AT ALL\r\n\r\n")
            try await client.waitForClose()
            let response = try #require(client.responses.first)
            #expect(response.status == 400)
            #expect(response.header("Tollgate-Error") == "bad-request")
        }
    }
}
