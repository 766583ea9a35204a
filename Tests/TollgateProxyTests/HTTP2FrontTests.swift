import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing
import TollgateHTTP
import TollgatePolicy
import TollgateProxy
import TollgateTesting

/// The HTTP/2 front on an `h2c` listener (prior knowledge), against real peers: curl, nghttp,
/// h2load, and Python's `h2` for frames no polite client sends.
@Suite(
    "HTTP/2 towards clients (h2c with prior knowledge)",
    .timeLimit(.minutes(3)),
    .enabled(if: HTTP2Peers.installed(HTTP2Peers.curl) && HTTP2Peers.installed(HTTP2Peers.nghttp))
)
struct HTTP2FrontTests {
    private func echoOrigin() async throws -> LoopbackOrigin {
        try await LoopbackOrigin.start { request, respond in
            respond.send(
                status: 200,
                headers: ["Connection": "keep-alive", "Keep-Alive": "timeout=5"],
                body: "\(request.method) \(request.target) \(request.bodyText)"
            )
        }
    }

    @Test("curl --http2-prior-knowledge is served over HTTP/2 and curl --http1.1 over HTTP/1.1 on the same listener")
    func bothProtocolsOnOneListener() async throws {
        let origin = try await echoOrigin()
        defer { origin.stop() }
        try await withProxy(mode: .reverse(upstream: origin.url()), h2c: true) { proxy in
            let url = "http://127.0.0.1:\(proxy.port)/a?b=c"
            let h2 = try await ChildProcess.run(
                HTTP2Peers.curl,
                ["-sS", "--noproxy", "*", "--http2-prior-knowledge", "-D", "-", "-d", "posted", url]
            )
            #expect(h2.status == 0, "\(h2.stderr)")
            #expect(h2.stdout.hasPrefix("HTTP/2 200"), "\(h2.stdout)")
            #expect(h2.stdout.hasSuffix("POST /a?b=c posted"))
            // Via names the protocol the request came with.
            #expect(origin.requests.first?.headerFields.values(for: "Via") == ["2 tollgate"])
            // Connection-specific fields from the origin do not reach an HTTP/2 client.
            #expect(!h2.stdout.lowercased().contains("keep-alive"))
            #expect(h2.stdout.lowercased().contains("via: 1.1 tollgate"))
            let h1 = try await ChildProcess.run(
                HTTP2Peers.curl,
                ["-sS", "--noproxy", "*", "--http1.1", "-D", "-", url]
            )
            #expect(h1.status == 0, "\(h1.stderr)")
            #expect(h1.stdout.hasPrefix("HTTP/1.1 200"))
            #expect(h1.stdout.hasSuffix("GET /a?b=c "))
            #expect(origin.requests.last?.headerFields.values(for: "Via") == ["1.1 tollgate"])
            let head = try await ChildProcess.run(
                HTTP2Peers.curl,
                ["-sS", "--noproxy", "*", "--http2-prior-knowledge", "-I", url]
            )
            #expect(head.status == 0, "\(head.stderr)")
            #expect(head.stdout.hasPrefix("HTTP/2 200"), "\(head.stdout)")
            #expect(head.stdout.contains("content-length: "), "a HEAD answer keeps its length")
            try await eventually("three access log lines") { proxy.accessLog.count == 3 }
            #expect(proxy.accessLog.contains { $0.contains("\"POST /a?b=c HTTP/2.0\" 200") }, "\(proxy.accessLog)")
            #expect(proxy.accessLog.contains { $0.contains("\"GET /a?b=c HTTP/1.1\" 200") })
        }
    }

    @Test("A listener without h2c answers the HTTP/2 preface as a bad HTTP/1.1 request")
    func h2cIsOptIn() async throws {
        let origin = try await echoOrigin()
        defer { origin.stop() }
        try await withProxy(mode: .reverse(upstream: origin.url())) { proxy in
            let result = try await ChildProcess.run(
                HTTP2Peers.curl,
                ["-sS", "--noproxy", "*", "--http2-prior-knowledge", "http://127.0.0.1:\(proxy.port)/"]
            )
            #expect(result.status != 0)
            #expect(origin.requestCount == 0)
        }
    }

    @Test("nghttp: ten concurrent streams on one connection each get their own answer")
    func concurrentStreams() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in
            // Answers out of order: later paths sooner.
            let delay = 200 - (Int(request.path.dropFirst(2)) ?? 0) * 15
            respond.after(.milliseconds(Int64(max(delay, 0)))) {
                respond.send(status: 200, body: "answer \(request.path)")
            }
        }
        defer { origin.stop() }
        try await withProxy(mode: .reverse(upstream: origin.url()), h2c: true) { proxy in
            let urls = (0..<10).map { "http://127.0.0.1:\(proxy.port)/p\($0)" }
            let result = try await ChildProcess.run(HTTP2Peers.nghttp, ["-v"] + urls)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.components(separatedBy: ":status: 200").count - 1 == 10, "\(result.stdout)")
            for index in 0..<10 { #expect(result.stdout.contains("answer /p\(index)")) }
            #expect(origin.requestCount == 10)
            try await eventually("ten access log lines") { proxy.accessLog.count == 10 }
            #expect(proxy.accessLog.allSatisfy { $0.contains("HTTP/2.0\" 200") })
        }
    }

    @Test(
        "h2load: 2000 requests over 4 connections, 32 streams each at once, all 2xx",
        .enabled(if: HTTP2Peers.installed(HTTP2Peers.h2load))
    )
    func load() async throws {
        let origin = try await echoOrigin()
        defer { origin.stop() }
        // What is counted is answers, not speed: on a loaded machine the default upstream timeout
        // (10 s) could turn a slow answer into a 504.
        var configuration = PolicyConfiguration()
        configuration.limits.upstreamTimeout = .seconds(90)
        try await withProxy(configuration: configuration, mode: .reverse(upstream: origin.url()), h2c: true) { proxy in
            let child = try ChildProcess(
                HTTP2Peers.h2load,
                ["-n", "2000", "-c", "4", "-m", "32", "http://127.0.0.1:\(proxy.port)/load"]
            )
            let status = try await child.waitForExit(timeout: .seconds(100))
            #expect(status == 0, "\(child.standardError)")
            #expect(child.standardOutput.contains("status codes: 2000 2xx"), "\(child.standardOutput)")
        }
    }

    @Test(
        "A client that never opens its window holds the body: the origin's send stalls, then all of it arrives",
        .enabled(if: HTTP2Peers.hasPythonH2)
    )
    func slowReaderHeldByFlowControl() async throws {
        let size = 64 << 20
        let originDone = NIOLockedValueBoxFlag()
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.sendHead(status: 200, headers: ["Content-Length": "\(size)", "Cache-Control": "no-store"])
            respond.writeWithFuture([UInt8](repeating: 0x61, count: size)).whenComplete { _ in originDone.set() }
        }
        defer { origin.stop() }
        try await withProxy(mode: .reverse(upstream: origin.url()), h2c: true) { proxy in
            let client = try HTTP2Peers.runPython(HTTP2Peers.slowReader, ["\(proxy.port)", "/big", "2"])
            defer { client.kill() }
            try await eventually("the stall is over", timeout: .seconds(40)) {
                client.outputLine(startingWith: "stalled") != nil
            }
            #expect(!originDone.isSet, "the proxy read the whole body although its client's window was shut")
            let stalled = client.outputLine(startingWith: "stalled")
            #expect(stalled == "stalled 16", "only the 16-byte window went out")
            _ = try await client.waitForExit(timeout: .seconds(60))
            #expect(
                client.standardOutput.contains("done 200 \(size)"),
                "\(client.standardOutput) \(client.standardError)"
            )
            try await eventually("the origin finished writing") { originDone.isSet }
        }
    }

    @Test("A rapid-reset client is cut off with GOAWAY ENHANCE_YOUR_CALM", .enabled(if: HTTP2Peers.hasPythonH2))
    func rapidReset() async throws {
        let origin = try await echoOrigin()
        defer { origin.stop() }
        var configuration = PolicyConfiguration()
        configuration.limits.http2MaxResets = 20
        try await withProxy(configuration: configuration, mode: .reverse(upstream: origin.url()), h2c: true) { proxy in
            let client = try HTTP2Peers.runPython(HTTP2Peers.rapidReset, ["\(proxy.port)", "500"])
            _ = try await client.waitForExit(timeout: .seconds(30))
            #expect(client.standardOutput.contains("goaway 11"), "\(client.standardOutput) \(client.standardError)")
            #expect(client.standardOutput.contains("closed"))
            #expect(origin.requestCount < 500)
        }
    }

    @Test(
        "A header list over http2-max-header-list-size ends the connection; nothing goes upstream",
        .enabled(if: HTTP2Peers.hasPythonH2)
    )
    func headerListSize() async throws {
        let origin = try await echoOrigin()
        defer { origin.stop() }
        var configuration = PolicyConfiguration()
        configuration.limits.http2MaxHeaderListSize = 4 << 10
        try await withProxy(configuration: configuration, mode: .reverse(upstream: origin.url()), h2c: true) { proxy in
            let get = [[":method", "GET"], [":scheme", "http"], [":authority", "gw"], [":path", "/big"]]
            let blocks = [get + [["x-big", String(repeating: "a", count: 8 << 10)]]]
            let json = String(decoding: try JSONSerialization.data(withJSONObject: blocks), as: UTF8.self)
            let client = try HTTP2Peers.runPython(HTTP2Peers.streams, ["\(proxy.port)", json])
            _ = try await client.waitForExit(timeout: .seconds(30))
            #expect(client.standardOutput.contains("goaway 1"), "\(client.standardOutput) \(client.standardError)")
            #expect(client.standardOutput.contains("closed"), "\(client.standardOutput) \(client.standardError)")
            #expect(origin.requestCount == 0)
        }
    }

    @Test(
        "More streams than http2-max-concurrent-streams end the connection with GOAWAY; the open ones finish, then it closes",
        .enabled(if: HTTP2Peers.python != nil)
    )
    func concurrentStreamLimit() async throws {
        let origin = try await echoOrigin()
        defer { origin.stop() }
        var configuration = PolicyConfiguration()
        configuration.limits.http2MaxConcurrentStreams = 2
        try await withProxy(configuration: configuration, mode: .reverse(upstream: origin.url()), h2c: true) { proxy in
            let client = try HTTP2Peers.runPython(HTTP2Peers.tooManyStreams, ["\(proxy.port)", "5"])
            _ = try await client.waitForExit(timeout: .seconds(30))
            let lines = Set(client.standardOutput.split(separator: "\n").map(String.init))
            // NIO answers the excess as a connection error (RFC 9113 §5.1.2 allows it or REFUSED_STREAM).
            // Closed once the two it took are answered (the script waits 3 s; the idle timeout is longer).
            #expect(lines == ["goaway 1", "answer 1", "answer 3", "closed"], "\(client.standardOutput) \(client.standardError)")
            #expect(origin.requestCount == 2)
        }
    }

    @Test(
        "A CONTINUATION flood is cut off with GOAWAY and the connection closed",
        .enabled(if: HTTP2Peers.python != nil)
    )
    func continuationFlood() async throws {
        let origin = try await echoOrigin()
        defer { origin.stop() }
        try await withProxy(mode: .reverse(upstream: origin.url()), h2c: true) { proxy in
            let client = try HTTP2Peers.runPython(HTTP2Peers.continuationFlood, ["\(proxy.port)", "200"])
            _ = try await client.waitForExit(timeout: .seconds(30))
            #expect(client.standardOutput.contains("goaway 11"), "\(client.standardOutput) \(client.standardError)")
            #expect(client.standardOutput.contains("closed"))
            #expect(origin.requestCount == 0)
        }
    }

    @Test("Shutdown sends GOAWAY; the stream in flight finishes with its whole response")
    func goawayOnShutdown() async throws {
        // The origin answers only once the client has seen the GOAWAY.
        let held = NIOLockedValueBox<OriginResponder?>(nil)
        let origin = try await LoopbackOrigin.start { _, respond in held.withLockedValue { $0 = respond } }
        defer { origin.stop() }
        let proxy = try await ProxyFixture.start(mode: .reverse(upstream: origin.url()), h2c: true)
        let client = try ChildProcess(HTTP2Peers.nghttp, ["-v", "http://127.0.0.1:\(proxy.port)/slow"])
        defer { client.kill() }
        try await eventually("the request reached the origin", timeout: .seconds(20)) {
            held.withLockedValue { $0 != nil }
        }
        let shutdown = Task { await proxy.shutdown(gracePeriod: .seconds(20)) }
        try await eventually("the client got a GOAWAY", timeout: .seconds(20)) {
            client.standardOutput.contains("recv GOAWAY")
        }
        held.withLockedValue { $0 }?.send(status: 200, body: "finished after the GOAWAY")
        let status = try await client.waitForExit(timeout: .seconds(20))
        await shutdown.value
        #expect(status == 0, "\(client.standardError)")
        #expect(client.standardOutput.contains(":status: 200"), "\(client.standardOutput)")
        #expect(client.standardOutput.contains("finished after the GOAWAY"))
        #expect(proxy.accessLog.contains { $0.contains("\"GET /slow HTTP/2.0\" 200") }, "\(proxy.accessLog)")
    }

    @Test("A forward h2c listener makes the absolute target from :scheme and :authority")
    func forwardTarget() async throws {
        let origin = try await echoOrigin()
        defer { origin.stop() }
        try await withProxy(h2c: true) { proxy in
            let result = try await ChildProcess.run(
                HTTP2Peers.nghttp,
                ["-v", "-H", ":authority: 127.0.0.1:\(origin.port)", "http://127.0.0.1:\(proxy.port)/via-forward"]
            )
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.contains(":status: 200"), "\(result.stdout)")
            #expect(result.stdout.contains("GET /via-forward"))
            try await eventually("one access log line") { proxy.accessLog.count == 1 }
            #expect(
                proxy.accessLog.first?.contains("\"GET http://127.0.0.1:\(origin.port)/via-forward HTTP/2.0\" 200")
                    == true,
                "\(proxy.accessLog)"
            )
        }
    }

    @Test(
        "CONNECT on a reverse listener's stream is answered 405; malformed blocks are reset with PROTOCOL_ERROR; the connection goes on",
        .enabled(if: HTTP2Peers.hasPythonH2)
    )
    func refusedOnAStream() async throws {
        let origin = try await echoOrigin()
        defer { origin.stop() }
        try await withProxy(mode: .reverse(upstream: origin.url()), h2c: true) { proxy in
            let get = [[":method", "GET"], [":scheme", "http"], [":authority", "gw"], [":path", "/ok"]]
            let blocks: [[[String]]] = [
                [[":method", "CONNECT"], [":authority", "127.0.0.1:\(origin.port)"]],
                [[":method", "GET"], [":scheme", "http"], [":authority", "gw"]],  // no :path
                get + [["X-Upper", "1"]],
                get + [["connection", "keep-alive"]],
                get,
            ]
            let json = String(decoding: try JSONSerialization.data(withJSONObject: blocks), as: UTF8.self)
            let client = try HTTP2Peers.runPython(HTTP2Peers.streams, ["\(proxy.port)", json])
            _ = try await client.waitForExit(timeout: .seconds(30))
            let lines = client.standardOutput.split(separator: "\n").map(String.init)
            try #require(lines.count == 5, "\(client.standardOutput) \(client.standardError)")
            #expect(lines[0].hasPrefix("status 405 CONNECT is not accepted by a reverse listener"), "\(lines[0])")
            #expect(Array(lines[1...3]) == ["reset 1", "reset 1", "reset 1"])
            #expect(lines[4] == "status 200 GET /ok")
            #expect(origin.requestCount == 1)
        }
    }
}

/// `tollgate serve` with `listen[].h2c: true` from its file: HTTP/2 streams share the cache with
/// HTTP/1.1 requests.
@Suite(
    "HTTP/2 with prior knowledge through the built executable",
    .timeLimit(.minutes(1)),
    .enabled(if: tollgateBinary != nil && HTTP2Peers.installed(HTTP2Peers.curl))
)
struct HTTP2FrontServeTests {
    @Test("curl --http2-prior-knowledge: a miss, then a cache hit with Cache-Status; HTTP/1.1 gets the same hit")
    func missThenHit() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, headers: ["Cache-Control": "max-age=600"], body: "kept \(request.path)")
        }
        defer { origin.stop() }
        let file = directory.appendingPathComponent("tollgate.yaml")
        try """
        listen:
          - address: "127.0.0.1:0"
            mode: reverse
            upstream: "http://127.0.0.1:\(origin.port)"
            h2c: true
        cache:
          path: "\(directory.appendingPathComponent("cache").path)"
        """.write(to: file, atomically: true, encoding: .utf8)
        let served = try await Served.start(["--config", file.path], directory: directory, lines: 1)
        defer { served.child.kill() }
        let url = "http://127.0.0.1:\(try served.port("reverse"))/doc"
        var statuses: [String] = []
        for arguments in [["--http2-prior-knowledge"], ["--http2-prior-knowledge"], ["--http1.1"]] {
            let result = try await ChildProcess.run(
                HTTP2Peers.curl,
                ["-sS", "--noproxy", "*", "-D", "-"] + arguments + [url]
            )
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.hasSuffix("kept /doc"))
            let lines = result.stdout.split(separator: "\r\n")  // curl writes "HTTP/2 200 " for HTTP/2
            #expect(lines.first == (arguments == ["--http1.1"] ? "HTTP/1.1 200 OK" : "HTTP/2 200 "), "\(result.stdout)")
            let status = lines.first { $0.lowercased().hasPrefix("cache-status:") }
            statuses.append(status.map { String($0.dropFirst("cache-status: ".count)) } ?? "none")
        }
        #expect(statuses == ["tollgate; fwd=uri-miss; stored", "tollgate; hit", "tollgate; hit"])
        #expect(origin.requestCount == 1)
    }
}
