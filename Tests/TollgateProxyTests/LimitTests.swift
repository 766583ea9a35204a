import Foundation
import NIOCore
import Testing
import TollgateHTTP
import TollgatePolicy
import TollgateProxy
import TollgateTesting

@Suite("Limits: head size, header count, timeouts", .timeLimit(.minutes(1)))
struct LimitTests {
    private func limits(_ change: (inout PolicyConfiguration.Limits) -> Void) -> PolicyConfiguration {
        var configuration = PolicyConfiguration()
        change(&configuration.limits)
        return configuration
    }

    @Test("A head past the default 64 KiB gets 431 header-too-large before it is finished, and the connection closes")
    func defaultHeadLimit() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "ok") }
        defer { origin.stop() }
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            try await client.send("GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\n")
            // 70 KiB of header lines, never finished with the empty line.
            // The proxy may close while lines are still being sent.
            for _ in 0..<70 where !client.isClosed {
                try? await client.send("X-Filler: " + String(repeating: "f", count: 1000) + "\r\n")
            }
            try await client.waitForClose()
            let response = try #require(client.responses.first)
            #expect(response.status == 431)
            #expect(response.header("Tollgate-Error") == "header-too-large")
            #expect(origin.requestCount == 0)
        }
    }

    @Test("A head of 60 KiB is under the default limit and is served")
    func underDefaultHeadLimit() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "ok") }
        defer { origin.stop() }
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            let filler = (0..<60).map { "X-Filler-\($0): " + String(repeating: "f", count: 1000) + "\r\n" }.joined()
            try await client.send("GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\n" + filler + "\r\n")
            let response = try #require(try await client.waitForResponses(1).first)
            #expect(response.status == 200)
        }
    }

    @Test("limits.max-header-bytes and limits.max-headers from the configuration are applied")
    func configuredLimits() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "ok") }
        defer { origin.stop() }
        let configuration = limits {
            $0.maxHeaderBytes = 1024
            $0.maxHeaders = 5
        }
        try await withProxy(configuration: configuration) { proxy in
            let url = "http://127.0.0.1:\(origin.port)/"
            let big = try await RawClient.connect(port: proxy.port)
            defer { big.close() }
            try await big.send(
                "GET \(url) HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "b", count: 1100))\r\n\r\n"
            )
            try await big.waitForClose()
            #expect(big.responses.first?.status == 431)

            let many = try await RawClient.connect(port: proxy.port)
            defer { many.close() }
            try await many.send(
                "GET \(url) HTTP/1.1\r\nHost: x\r\n" + (1...6).map { "X-\($0): v\r\n" }.joined() + "\r\n"
            )
            try await many.waitForClose()
            #expect(many.responses.first?.status == 431)
            #expect(many.responses.first?.header("Tollgate-Error") == "header-too-large")

            let fine = try await RawClient.connect(port: proxy.port)
            defer { fine.close() }
            try await fine.send("GET \(url) HTTP/1.1\r\nHost: x\r\nX-1: v\r\n\r\n")
            #expect(try await fine.waitForResponses(1).first?.status == 200)
            #expect(origin.requestCount == 1)
        }
    }

    @Test("A slowloris client is cut off with 408 after header-read-timeout while another client is served")
    func slowloris() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "served") }
        defer { origin.stop() }
        let configuration = limits {
            $0.headerReadTimeout = .milliseconds(600)
            $0.clientIdleTimeout = .seconds(5)
        }
        try await withProxy(configuration: configuration) { proxy in
            let slow = try await RawClient.connect(port: proxy.port)
            defer { slow.close() }
            let started = ContinuousClock.now
            try await slow.send("GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\n")
            let dripping = Task {
                // One header line every 100 ms: always progress, never a finished head.
                for index in 0..<40 where !slow.isClosed {
                    try? await slow.send("X-Drip-\(index): d\r\n")
                    try? await Task.sleep(for: .milliseconds(100))
                }
            }
            defer { dripping.cancel() }
            let other = try await RawClient.connect(port: proxy.port)
            defer { other.close() }
            try await other.send("GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try await other.waitForResponses(1).first?.bodyText == "served")

            try await slow.waitForClose(timeout: .seconds(5))
            let took = ContinuousClock.now - started
            #expect(took >= .milliseconds(500))
            #expect(took < .seconds(3))
            let response = try #require(slow.responses.first)
            #expect(response.status == 408)
            #expect(response.header("Tollgate-Error") == "request-timeout")
            #expect(origin.requestCount == 1)
        }
    }

    @Test("A connection with no request is closed after client-idle-timeout, also after a response")
    func idleTimeout() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "ok") }
        defer { origin.stop() }
        // Two seconds: long enough that a busy machine sends the request in time.
        let configuration = limits { $0.clientIdleTimeout = .seconds(2) }
        try await withProxy(configuration: configuration) { proxy in
            let started = ContinuousClock.now
            let silent = try await RawClient.connect(port: proxy.port)
            defer { silent.close() }
            let kept = try await RawClient.connect(port: proxy.port)
            defer { kept.close() }
            try await kept.send("GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try await kept.waitForResponses(1).first?.status == 200)
            if ContinuousClock.now - started < .milliseconds(1700) { #expect(!silent.isClosed) }
            try await silent.waitForClose(timeout: .seconds(6))
            #expect(ContinuousClock.now - started >= .milliseconds(1900))
            try await kept.waitForClose(timeout: .seconds(6))
            #expect(silent.received.isEmpty)
        }
    }

    @Test("A request body that stops arriving gets 408 after client-idle-timeout")
    func stalledBody() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "ok") }
        defer { origin.stop() }
        // Long enough that a busy machine still sends the head before the connection's idle
        // timeout (which runs from the connect) closes it.
        let configuration = limits { $0.clientIdleTimeout = .milliseconds(1500) }
        try await withProxy(configuration: configuration) { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            try await client.send(
                "POST http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc"
            )
            try await client.waitForClose(timeout: .seconds(5))
            let response = try #require(client.responses.first)
            #expect(response.status == 408)
            #expect(response.header("Tollgate-Error") == "request-timeout")
            #expect(origin.requestCount == 0)
        }
    }

    @Test("An upstream that does not answer within upstream-timeout gives 504 upstream-timeout")
    func upstreamTimeout() async throws {
        let origin = try await LoopbackOrigin.start { _, _ in }  // never answers
        defer { origin.stop() }
        let configuration = limits { $0.upstreamTimeout = .milliseconds(500) }
        try await withProxy(configuration: configuration) { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            let started = ContinuousClock.now
            try await client.send("GET http://127.0.0.1:\(origin.port)/slow HTTP/1.1\r\nHost: x\r\n\r\n")
            let response = try #require(try await client.waitForResponses(1, timeout: .seconds(5)).first)
            #expect(ContinuousClock.now - started < .seconds(3))
            #expect(response.status == 504)
            #expect(response.header("Tollgate-Error") == "upstream-timeout")
            #expect(response.bodyText.contains("upstream-timeout"))
            #expect(response.bodyText.filter { $0 == "\n" }.count == 1)
            try await eventually("the origin connection is closed") { origin.openConnectionCount == 0 }
        }
    }

    @Test("A client that sends its body slowly is not an upstream timeout")
    func slowUploadIsNotAnUpstreamTimeout() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, body: request.bodyText)
        }
        defer { origin.stop() }
        let configuration = limits { $0.upstreamTimeout = .milliseconds(400) }
        try await withProxy(configuration: configuration) { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            try await client.send(
                "POST http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\nContent-Length: 8\r\n\r\n"
            )
            for piece in ["ab", "cd", "ef", "gh"] {
                try await Task.sleep(for: .milliseconds(250))
                try await client.send(piece)
            }
            let response = try #require(try await client.waitForResponses(1).first)
            #expect(response.status == 200)
            #expect(response.bodyText == "abcdefgh")
        }
    }

    @Test("An upstream that stalls mid-body past upstream-timeout ends the client's response by closing")
    func upstreamStallsMidBody() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.sendHead(status: 200, headers: ["Content-Length": "100"])
            respond.write("first part")
        }
        defer { origin.stop() }
        // Long enough for the head to arrive on a loaded machine; the stall is what times out.
        let configuration = limits { $0.upstreamTimeout = .milliseconds(1500) }
        try await withProxy(configuration: configuration) { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            try await client.send("GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\n\r\n")
            try await client.waitForClose(timeout: .seconds(8))
            #expect(client.text.hasPrefix("HTTP/1.1 200"))
            #expect(client.text.hasSuffix("first part"))
            #expect(client.responses.isEmpty, "the response must not look complete")
        }
    }
}
