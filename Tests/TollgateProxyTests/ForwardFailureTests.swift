import Foundation
import NIOCore
import NIOPosix
import Testing
import TollgateHTTP
import TollgateProxy
import TollgateSession
import TollgateTesting

@Suite("Forward proxy: upstream failures", .timeLimit(.minutes(1)))
struct ForwardFailureTests {
    /// A port on 127.0.0.1 that nothing listens on (bound, read, closed).
    private func closedPort() async throws -> Int {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(channel.localAddress?.port)
        try await channel.close()
        return port
    }

    @Test("An unreachable upstream gives 502 with Tollgate-Error: upstream-unreachable and a one-line body")
    func unreachableUpstream() async throws {
        let port = try await closedPort()
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            try await client.send("GET http://127.0.0.1:\(port)/x HTTP/1.1\r\nHost: x\r\n\r\n")
            let response = try #require(try await client.waitForResponses(1).first)
            #expect(response.status == 502)
            #expect(response.header("Tollgate-Error") == "upstream-unreachable")
            #expect(response.header("Content-Type") == "text/plain")
            #expect(response.bodyText.hasSuffix("\n"))
            #expect(response.bodyText.filter { $0 == "\n" }.count == 1)
            #expect(response.bodyText.contains("127.0.0.1:\(port)"))
            #expect(!client.isClosed)
            try await eventually("the access log line") { !proxy.accessLog.isEmpty }
            #expect(proxy.accessLog.first?.contains("\" 502 ") == true)
        }
    }

    @Test("An origin that closes after 10 of 100 announced bytes makes the proxy close the client connection")
    func shortBodyClosesTheClient() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in
            if request.path == "/short" {
                respond.sendHead(status: 200, headers: ["Content-Length": "100"])
                respond.write("0123456789")
                respond.after(.milliseconds(50)) { respond.close() }
            } else {
                respond.send(status: 200, body: "fine")
            }
        }
        defer { origin.stop() }
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            try await client.send("GET http://127.0.0.1:\(origin.port)/short HTTP/1.1\r\nHost: x\r\n\r\n")
            try await client.waitForClose()
            let text = client.text
            #expect(text.hasPrefix("HTTP/1.1 200"))
            #expect(text.contains("Content-Length: 100"))
            let body = try #require(text.components(separatedBy: "\r\n\r\n").last)
            #expect(body == "0123456789")
            #expect(client.responses.isEmpty, "the response must not look complete")

            let next = try await RawClient.connect(port: proxy.port)
            defer { next.close() }
            try await next.send("GET http://127.0.0.1:\(origin.port)/ok HTTP/1.1\r\nHost: x\r\n\r\n")
            let response = try #require(try await next.waitForResponses(1).first)
            #expect(response.status == 200)
            #expect(response.bodyText == "fine")
        }
    }

    @Test("An origin that answers garbage gives 502 upstream-protocol-error with a one-line body")
    func protocolFailure() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.write("SMTP READY\r\n\r\n") }
        defer { origin.stop() }
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            try await client.send("GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\n\r\n")
            let response = try #require(try await client.waitForResponses(1).first)
            #expect(response.status == 502)
            #expect(response.header("Tollgate-Error") == "upstream-protocol-error")
            #expect(response.bodyText.filter { $0 == "\n" }.count == 1)
        }
    }

    @Test("A name that does not resolve gives 502 upstream-unreachable")
    func unresolvable() async throws {
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            try await client.send("GET http://no-such-host.invalid/ HTTP/1.1\r\nHost: x\r\n\r\n")
            let response = try #require(try await client.waitForResponses(1).first)
            #expect(response.status == 502)
            #expect(response.header("Tollgate-Error") == "upstream-unreachable")
            #expect(response.bodyText.contains("no-such-host.invalid"))
        }
    }

    @Test("A chunked response whose origin dies mid-body ends without its last chunk; the next request is served")
    func chunkedDiesMidBody() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in
            if request.path == "/dies" {
                respond.sendHead(status: 200, headers: ["Transfer-Encoding": "chunked"])
                respond.writeChunk("part one")
                respond.after(.milliseconds(50)) { respond.close() }
            } else {
                respond.send(status: 200, body: "next")
            }
        }
        defer { origin.stop() }
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            try await client.send("GET http://127.0.0.1:\(origin.port)/dies HTTP/1.1\r\nHost: x\r\n\r\n")
            try await client.waitForClose()
            #expect(client.text.contains("part one"))
            #expect(!client.text.hasSuffix("0\r\n\r\n"), "the terminating chunk must not be sent")
            #expect(client.responses.isEmpty)
            let next = try await RawClient.connect(port: proxy.port)
            defer { next.close() }
            try await next.send("GET http://127.0.0.1:\(origin.port)/ok HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try await next.waitForResponses(1).first?.bodyText == "next")
            try await eventually("both access log lines") { proxy.accessLog.count == 2 }
        }
    }

    @Test("An origin that closes before answering gives 502 with Tollgate-Error: upstream-connection-lost")
    func originClosesBeforeAnswering() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.close() }
        defer { origin.stop() }
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            try await client.send("GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\n\r\n")
            let response = try #require(try await client.waitForResponses(1).first)
            #expect(response.status == 502)
            #expect(response.header("Tollgate-Error") == "upstream-connection-lost")
        }
    }

    @Test("A client that gives up before the answer is logged without a status, and its task is cancelled")
    func clientGivesUp() async throws {
        let origin = try await LoopbackOrigin.start { _, _ in }  // never answers
        defer { origin.stop() }
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            try await client.send("GET http://127.0.0.1:\(origin.port)/wait HTTP/1.1\r\nHost: x\r\n\r\n")
            try await eventually("the origin got the request") { origin.requestCount == 1 }
            client.close()
            try await eventually("the access log line") { !proxy.accessLog.isEmpty }
            let line = try #require(proxy.accessLog.first)
            #expect(line.contains("/wait HTTP/1.1\" - - "), "\(line)")
            try await eventually("the origin connection closes") { origin.openConnectionCount == 0 }
        }
    }

    @Test("A client that closes mid-response cancels its task: the origin connection is closed")
    func clientCloseCancelsTask() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.sendHead(status: 200, headers: ["Content-Length": "1000000"])
            respond.write("partial")
        }
        defer { origin.stop() }
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            try await client.send("GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\n\r\n")
            try await client.waitUntil("the first body bytes", timeout: .seconds(10)) { $0.text.contains("partial") }
            #expect(origin.openConnectionCount == 1)
            client.close()
            try await eventually("the origin connection closes") { origin.openConnectionCount == 0 }
            try await eventually("the session forgets the task") { proxy.session.allTasks.isEmpty }
        }
    }

    @Test("A client that stops reading stops the proxy reading from the origin (back-pressure), and resumes")
    func backPressure() async throws {
        let size = 64 << 20
        let originDone = NIOLockedValueBoxFlag()
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.sendHead(status: 200, headers: ["Content-Length": "\(size)"])
            respond.writeWithFuture([UInt8](repeating: 0x61, count: size)).whenComplete { _ in originDone.set() }
        }
        defer { origin.stop() }
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port, paused: true)
            defer { client.close() }
            try await client.send("GET http://127.0.0.1:\(origin.port)/big HTTP/1.1\r\nHost: x\r\n\r\n")
            try await Task.sleep(for: .seconds(2))
            #expect(!originDone.isSet, "the proxy read the whole body although its client read nothing")
            try await client.resumeReading()
            try await client.waitUntil("the whole body", timeout: .seconds(40)) { $0.receivedCount >= size }
            try await eventually("the origin finished writing") { originDone.isSet }
        }
    }
}
