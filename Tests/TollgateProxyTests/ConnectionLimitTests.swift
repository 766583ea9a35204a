import Foundation
import Testing
import TollgatePolicy
@testable import TollgateProxy
import TollgateTesting

/// `access.connection-limit` (connections per client address) and `listen[].max-connections`
/// (connections a listener serves at once).
@Suite("Connection limits: per client address, per listener", .timeLimit(.minutes(1)))
struct ConnectionLimitTests {
    private func get(_ origin: LoopbackOrigin, _ path: String = "/") -> String {
        "GET http://127.0.0.1:\(origin.port)\(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    }

    /// An origin-form request, for a reverse listener.
    private func get(_ path: String) -> String {
        "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    }

    @Test("Past access.connection-limit a client's connection is answered 429 too-many-connections and closed, over HTTP/1.1 and h2c; another address is not limited; a closed connection frees its place")
    func perClientLimit() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "ok") }
        defer { origin.stop() }
        var configuration = PolicyConfiguration()
        configuration.access.connectionLimit = 2
        try await withProxy(configuration: configuration, mode: .reverse(upstream: origin.url()), h2c: true) { proxy in
            var held: [RawClient] = []
            defer { for client in held { client.close() } }
            for _ in 0..<2 {
                let client = try await RawClient.connect(port: proxy.port)
                held.append(client)
                try await client.send(get("/"))
                #expect(try await client.waitForResponses(1).first?.status == 200)
            }
            let third = try await RawClient.connect(port: proxy.port)
            defer { third.close() }
            try await third.send(get("/third"))
            let refused = try #require(try await third.waitForResponses(1).first)
            #expect(refused.status == 429)
            #expect(refused.header("Tollgate-Error") == "too-many-connections")
            #expect(
                refused.bodyText.contains("client 127.0.0.1 has 2 connections open already, as many as access.connection-limit allows"),
                "\(refused.bodyText)"
            )
            try await third.waitForClose()
            #expect(!origin.requests.contains { $0.target == "/third" }, "a refused request does not reach the origin")

            // HTTP/2 with prior knowledge: the stream is answered the same.
            let h2 = try await ChildProcess.run(
                "/usr/bin/curl",
                ["-s", "--noproxy", "*", "--http2-prior-knowledge", "-o", "/dev/null", "-w", "%{http_code} %{http_version}",
                 "http://127.0.0.1:\(proxy.port)/h2"]
            )
            #expect(h2.stdout == "429 2", "\(h2.stderr)")

            // Another address (127.0.0.2, loopback too) has places of its own.
            let other = try await ChildProcess.run(
                "/usr/bin/curl",
                ["-s", "--noproxy", "*", "-o", "/dev/null", "-w", "%{http_code}", "--interface", "127.0.0.2",
                 "http://127.0.0.1:\(proxy.port)/other"]
            )
            #expect(other.stdout == "200", "\(other.stderr)")

            // One of the two closes: the next connection is served.
            held.removeFirst().close()
            let port = proxy.port
            let request = get("/next")
            try await eventuallyAsync("the closed connection's place is free") {
                guard let next = try? await RawClient.connect(port: port) else { return false }
                defer { next.close() }
                try? await next.send(request)
                return (try? await next.waitForResponses(1))?.first?.status == 200
            }
        }
    }

    @Test("The counter counts each address up to its limit and forgets an address with its last connection")
    func counter() {
        let counter = ClientConnectionCounter()
        #expect(counter.open("10.0.0.1", limit: 2))
        #expect(counter.open("10.0.0.1", limit: 2))
        #expect(!counter.open("10.0.0.1", limit: 2))
        #expect(counter.open("10.0.0.2", limit: 2))
        #expect(counter.openConnections(of: "10.0.0.1") == 2)
        counter.close("10.0.0.1")
        #expect(counter.open("10.0.0.1", limit: 2))
        counter.close("10.0.0.1")
        counter.close("10.0.0.1")
        counter.close("10.0.0.2")
        #expect(counter.clientCount == 0)
        counter.close("10.0.0.3")  // never counted: nothing happens
        #expect(counter.clientCount == 0)
    }

    @Test("At max-connections the listener serves no new connection until one closes; those waiting are served in order")
    func listenerMaximum() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "ok") }
        defer { origin.stop() }
        try await withProxy(maxConnections: 2) { proxy in
            var served: [RawClient] = []
            defer { for client in served { client.close() } }
            for _ in 0..<2 {
                let client = try await RawClient.connect(port: proxy.port)
                served.append(client)
                try await client.send(get(origin))
                #expect(try await client.waitForResponses(1).first?.status == 200)
            }
            // The kernel completes the handshakes; the proxy reads nothing of these yet.
            let third = try await RawClient.connect(port: proxy.port)
            defer { third.close() }
            try await third.send(get(origin, "/third"))
            let fourth = try await RawClient.connect(port: proxy.port)
            defer { fourth.close() }
            try await fourth.send(get(origin, "/fourth"))
            try await Task.sleep(for: .milliseconds(400))
            #expect(third.receivedCount == 0 && fourth.receivedCount == 0)
            #expect(origin.requests.count == 2)

            served.removeFirst().close()
            #expect(try await third.waitForResponses(1).first?.status == 200)
            try await Task.sleep(for: .milliseconds(200))
            #expect(fourth.receivedCount == 0, "still two served: the second and the third")
            served.removeFirst().close()
            #expect(try await fourth.waitForResponses(1).first?.status == 200)
            // Reached twice: at the second connection, and again when the third took the first's place.
            let exposition = proxy.server.configuration.metrics.exposition()
            #expect(
                exposition.contains("tollgate_listener_max_connections_reached_total{listener=\"127.0.0.1:0\"} 2\n"),
                "\(exposition)"
            )
        }
    }
}

/// The same limits from the configuration file, through `tollgate serve`.
@Suite(
    "Connection limits from the file (the built executable)",
    .timeLimit(.minutes(1)),
    .enabled(if: tollgateBinary != nil)
)
struct ServedConnectionLimitTests {
    @Test("listen[].max-connections and access.connection-limit as written in the file")
    func fromTheFile() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "ok") }
        defer { origin.stop() }
        let config = directory.appendingPathComponent("tollgate.yaml")
        try """
        listen:
          - address: "127.0.0.1:0"
            max-connections: 1
          - address: "127.0.0.1:0"
        access:
          connection-limit: 2
        log: { access: off }
        """.write(to: config, atomically: true, encoding: .utf8)
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 2)
        defer { served.child.kill() }
        let (capped, open) = (served.listeners[0].port, served.listeners[1].port)
        let request = "GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"

        let first = try await RawClient.connect(port: capped)
        defer { first.close() }
        try await first.send(request)
        #expect(try await first.waitForResponses(1).first?.status == 200)
        let waiting = try await RawClient.connect(port: capped)
        defer { waiting.close() }
        try await waiting.send(request)
        try await Task.sleep(for: .milliseconds(300))
        #expect(waiting.receivedCount == 0, "the capped listener serves one connection at a time")
        // A connection waiting to be served is not counted yet: 127.0.0.1 has one served, and
        // may have one more.
        let second = try await RawClient.connect(port: open)
        defer { second.close() }
        try await second.send(request)
        #expect(try await second.waitForResponses(1).first?.status == 200)
        let third = try await RawClient.connect(port: open)
        defer { third.close() }
        try await third.send(request)
        #expect(try await third.waitForResponses(1).first?.header("Tollgate-Error") == "too-many-connections")
        first.close()
        #expect(try await waiting.waitForResponses(1).first?.status == 200)
    }
}

@Suite("AcceptGate: max-connections, event by event")
struct AcceptGateTests {
    private func describe(_ actions: [AcceptGate<String>.Action]) -> [String] {
        actions.map {
            switch $0 {
            case .serve(let name): "serve \(name)"
            case .pause: "pause"
            case .resume: "resume"
            case .drop(let names): "drop \(names.joined(separator: ","))"
            }
        }
    }

    @Test("Serves up to the maximum and pauses at it; a close lets the first waiting one in, and with none waiting accepting resumes")
    func events() {
        var gate = AcceptGate<String>(maximum: 2)
        #expect(describe(gate.accepted("a")) == ["serve a"])
        #expect(describe(gate.accepted("b")) == ["serve b", "pause"])
        // Accepted in the same read before the pause took effect: held, in order.
        #expect(describe(gate.accepted("c")) == ["pause"])
        #expect(describe(gate.accepted("d")) == ["pause"])
        #expect(gate.waiting == ["c", "d"])
        #expect(describe(gate.closed()) == ["serve c"])
        #expect(describe(gate.closed()) == ["serve d"])
        #expect(gate.served == 2 && gate.paused)
        #expect(describe(gate.closed()) == ["resume"])
        #expect(describe(gate.closed()) == [])
        #expect(gate.served == 0 && !gate.paused)
    }

    @Test("The listener closing drops those waiting")
    func listenerClosed() {
        var gate = AcceptGate<String>(maximum: 1)
        _ = gate.accepted("a")
        _ = gate.accepted("b")
        #expect(describe(gate.listenerClosed()) == ["drop b"])
        #expect(describe(gate.listenerClosed()) == [])
        #expect(describe(gate.closed()) == ["resume"])
    }
}
