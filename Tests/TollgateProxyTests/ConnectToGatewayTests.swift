import Foundation
import NIOCore
import NIOPosix
import Testing
import TollgateTLS
import TollgateTesting

/// A pinning gateway in front of an API with two backends (`hosts[].connect-to`): the built
/// executable as a reverse listener for `https://api.test`, a name that does not resolve, whose
/// connections go to two nginx servers with a certificate for that name alone, checked against
/// the CA and pin of the rule.
@Suite(
    "connect-to: a reverse gateway over two backends (the built executable, nginx)", .serialized, .timeLimit(.minutes(1)),
    .enabled(if: tollgateBinary != nil && NGINXOrigin.isInstalled)
)
struct ConnectToGatewayTests {
    @Test("Connections go to the backends in turn, past one that refuses, checked by the rule's CA, pin and name; when a backend stops, the other serves")
    func gatewayOverTwoBackends() async throws {
        let pki = try TestPKI(host: "api.test")
        // One request per connection (and HTTP/1.1, `http2: off`): each request is a new connection.
        let first = try await NGINXOrigin.start(pki: pki, keepaliveRequests: 1)
        defer { first.stop() }
        let second = try await NGINXOrigin.start(pki: pki, keepaliveRequests: 1)
        defer { second.stop() }
        let refusing = ClosedPort().port
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let pin = pki.server.certificate.spkiPin
        let config = directory.appendingPathComponent("tollgate.yaml")
        try """
            listen:
              - address: "127.0.0.1:0"
                mode: reverse
                upstream: "https://api.test"
              - address: "127.0.0.1:0"
                mode: reverse
                upstream: "https://other-name.test"
            admin:
              address: "127.0.0.1:0"
            cache:
              path: "\(directory.appendingPathComponent("cache").path)"
            hosts:
              - match: api.test
                http2: off
                connect-to: ["127.0.0.1:\(first.port)", "127.0.0.1:\(refusing)", "127.0.0.1:\(second.port)"]
                trust:
                  roots: "\(pki.caFile)"
                  pins: ["\(pin)"]
              - match: other-name.test
                connect-to: "127.0.0.1:\(second.port)"
                trust:
                  roots: "\(pki.caFile)"
            """.write(to: config, atomically: true, encoding: .utf8)
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 3)
        defer { served.child.kill() }
        let gateway = served.listeners[0].port
        let otherName = served.listeners[1].port

        for index in 0..<4 {
            let response = try await request("GET /item/\(index) HTTP/1.1\r\nHost: gateway\r\n\r\n", port: gateway)
            #expect(response.status == 200, "\(response.bodyText)")
            #expect(response.bodyText == "GET /item/\(index)\n")
        }
        // Two each: the refusing target's turn went to the next, and it was then left out.
        #expect(first.accessLog.count == 2, "\(first.accessLog)")
        #expect(second.accessLog.count == 2, "\(second.accessLog)")

        first.stop()
        for index in 4..<7 {
            let response = try await request("GET /item/\(index) HTTP/1.1\r\nHost: gateway\r\n\r\n", port: gateway)
            #expect(response.status == 200, "\(response.bodyText)")
        }
        #expect(second.accessLog.count == 5, "\(second.accessLog)")
        // Each target going down is said once in the diagnostic log (tollgate.upstream).
        let diagnostics = served.child.standardError
        for port in [refusing, first.port] {
            #expect(
                diagnostics.split(separator: "\n").filter { $0.contains("a connect-to target failed") && $0.contains("127.0.0.1:\(port)") }.count == 1,
                "\(diagnostics)"
            )
        }

        // /metrics: which target is passed over now, and how many connections to each failed.
        let metrics = try await request("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: try served.port("admin")).bodyText
        #expect(metrics.contains("tollgate_connect_to_target_down{target=\"127.0.0.1:\(first.port)\"} 1"), "\(metrics)")
        #expect(metrics.contains("tollgate_connect_to_target_down{target=\"127.0.0.1:\(second.port)\"} 0"), "\(metrics)")
        #expect(metrics.contains("tollgate_connect_to_failures_total{target=\"127.0.0.1:\(refusing)\"} 1"), "\(metrics)")
        #expect(metrics.contains("tollgate_connect_to_failures_total{target=\"127.0.0.1:\(first.port)\"} 1"), "\(metrics)")
        // When the backends' chain runs out: the leaf's notAfter (it expires before the CA).
        let expiry = "tollgate_upstream_certificate_expiry_timestamp_seconds{host=\"api.test\"} "
        let expiryLine = try #require(metrics.split(separator: "\n").first { $0.hasPrefix(expiry) }, "\(metrics)")
        #expect(Double(expiryLine.dropFirst(expiry.count)) == pki.server.certificate.notAfter.timeIntervalSince1970, "\(expiryLine)")
        #expect(!metrics.contains("tollgate_upstream_certificate_expiry_timestamp_seconds{host=\"other-name.test\"}"), "refused: not recorded")

        let upstreams = try await request("GET /upstreams HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: try served.port("admin")).bodyText
        #expect(upstreams.contains("{\"backup\":false,\"down\":true,\"failures\":1,\"target\":\"127.0.0.1:\(first.port)\",\"weight\":1}"), "\(upstreams)")
        #expect(upstreams.contains("{\"backup\":false,\"down\":false,\"failures\":0,\"target\":\"127.0.0.1:\(second.port)\",\"weight\":1}"), "\(upstreams)")

        // The certificate is checked against the rule's name, not the target's address: a backend
        // whose certificate is for api.test does not pass for other-name.test.
        let refused = try await request("GET /x HTTP/1.1\r\nHost: gateway\r\n\r\n", port: otherName)
        #expect(refused.status == 502)
        #expect(refused.header("Tollgate-Error") == "upstream-tls-untrusted", "\(refused.bodyText)")
        #expect(refused.bodyText.contains("hostname mismatch"), "\(refused.bodyText)")
    }
}

/// The same gateway in front of two HTTP/2 backends (nghttpd): one h2 connection carries every
/// request, so without a connection per target one backend would get them all.
@Suite(
    "connect-to: h2 backends share the load (the built executable, nghttpd)", .timeLimit(.minutes(1)),
    .enabled(if: tollgateBinary != nil && NGHTTPDOrigin.isInstalled)
)
struct ConnectToHTTP2BackendsTests {
    /// The requests for `path` prefix an nghttpd has logged (`-v` prints each HEADERS' `:path`).
    private func requests(_ origin: NGHTTPDOrigin, under prefix: String) -> Int {
        origin.process.standardOutput.split(separator: "\n").filter { $0.contains(":path: \(prefix)") }.count
    }

    /// Two nghttpd backends with `pki`'s certificate for api.test, each serving `f.txt`.
    private func startBackends(_ pki: TestPKI) async throws -> (NGHTTPDOrigin, NGHTTPDOrigin) {
        let body = Data("backend file\n".utf8)
        let first = try await NGHTTPDOrigin.start(pki: pki, files: ["f.txt": body])
        do {
            return (first, try await NGHTTPDOrigin.start(pki: pki, files: ["f.txt": body]))
        } catch {
            first.process.kill()
            throw error
        }
    }

    /// `DIRECTORY/tollgate.yaml`: a reverse gateway for `https://api.test` over the backends on
    /// 127.0.0.1 at `targets` (each `PORT`, or `PORT weight=N`, `PORT backup`; h2 unless `http2`
    /// is false, trusted by `roots`, nothing stored), and an admin listener.
    private func writeGateway(_ config: URL, in directory: URL, targets: [String], roots: String, http2: Bool = true) throws {
        try """
            listen:
              - address: "127.0.0.1:0"
                mode: reverse
                upstream: "https://api.test"
            admin:
              address: "127.0.0.1:0"
            cache:
              path: "\(directory.appendingPathComponent("cache").path)"
            hosts:
              - match: api.test
                connect-to: [\(targets.map { "\"127.0.0.1:\($0)\"" }.joined(separator: ", "))]
                http2: \(http2 ? "auto" : "off")
                cache: { store: deny }
                trust: { roots: "\(roots)" }
            """.write(to: config, atomically: true, encoding: .utf8)
    }

    @Test("Weights share the connections out (3 to 1), a backup gets none while another answers, and serves once they have all stopped")
    func weightsAndBackup() async throws {
        let pki = try TestPKI(host: "api.test")
        // One request per connection (and HTTP/1.1, `http2: off`): each request is a new connection.
        let heavy = try await NGINXOrigin.start(pki: pki, keepaliveRequests: 1)
        defer { heavy.stop() }
        let light = try await NGINXOrigin.start(pki: pki, keepaliveRequests: 1)
        defer { light.stop() }
        let spare = try await NGINXOrigin.start(pki: pki, keepaliveRequests: 1)
        defer { spare.stop() }
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("tollgate.yaml")
        try writeGateway(
            config, in: directory, targets: ["\(spare.port) backup", "\(heavy.port) weight=3", "\(light.port)"], roots: pki.caFile, http2: false
        )
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 2)
        defer { served.child.kill() }
        let gateway = served.listeners[0].port

        for index in 0..<8 {
            let response = try await request("GET /item/\(index) HTTP/1.1\r\nHost: gateway\r\n\r\n", port: gateway)
            #expect(response.status == 200, "\(response.bodyText)")
        }
        #expect(heavy.accessLog.count == 6, "\(heavy.accessLog)")
        #expect(light.accessLog.count == 2, "\(light.accessLog)")
        #expect(spare.accessLog.isEmpty, "\(spare.accessLog)")
        // `/upstreams` says how each target is listed.
        let listing = try await request("GET /upstreams HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: try served.port("admin")).bodyText
        #expect(listing.contains("\"backup\":false,\"down\":false,\"failures\":0,\"target\":\"127.0.0.1:\(heavy.port)\",\"weight\":3"), "\(listing)")
        #expect(listing.contains("\"backup\":false,\"down\":false,\"failures\":0,\"target\":\"127.0.0.1:\(light.port)\",\"weight\":1"), "\(listing)")

        heavy.stop()
        light.stop()
        for index in 8..<11 {
            let response = try await request("GET /item/\(index) HTTP/1.1\r\nHost: gateway\r\n\r\n", port: gateway)
            #expect(response.status == 200, "\(response.bodyText)")
        }
        #expect(spare.accessLog.count == 3, "\(spare.accessLog)")
        let after = try await request("GET /upstreams HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: try served.port("admin")).bodyText
        #expect(after.contains("{\"backup\":true,\"down\":false,\"failures\":0,\"target\":\"127.0.0.1:\(spare.port)\",\"weight\":1}"), "\(after)")
    }

    @Test("Requests one at a time and twenty at once both reach each backend, over one h2 connection to each")
    func streamsSpreadOverBackends() async throws {
        let pki = try TestPKI(host: "api.test")
        let (first, second) = try await startBackends(pki)
        defer { first.process.kill(); second.process.kill() }
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("tollgate.yaml")
        try writeGateway(config, in: directory, targets: [first.port, second.port].map(String.init), roots: pki.caFile)
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 2)
        defer { served.child.kill() }
        let gateway = try served.port("reverse")

        for index in 0..<8 {
            let response = try await request("GET /f.txt?one=\(index) HTTP/1.1\r\nHost: gateway\r\n\r\n", port: gateway)
            #expect(response.status == 200, "\(response.bodyText)")
            #expect(response.bodyText == "backend file\n")
        }
        try await eventually("each backend logged its requests") {
            requests(first, under: "/f.txt?one=") + requests(second, under: "/f.txt?one=") == 8
        }
        // The first request made the first connection and started the second beside it; from then
        // on they alternate.
        #expect(requests(first, under: "/f.txt?one=") >= 3, "\(requests(first, under: "/f.txt?one="))")
        #expect(requests(second, under: "/f.txt?one=") >= 3, "\(requests(second, under: "/f.txt?one="))")

        // Twenty at once from separate clients: both backends take part.
        try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<20 {
                group.addTask {
                    try await request("GET /f.txt?many=\(index) HTTP/1.1\r\nHost: gateway\r\n\r\n", port: gateway).status
                }
            }
            for try await status in group { #expect(status == 200) }
        }
        try await eventually("each backend logged the burst") {
            requests(first, under: "/f.txt?many=") + requests(second, under: "/f.txt?many=") == 20
        }
        #expect(requests(first, under: "/f.txt?many=") >= 5)
        #expect(requests(second, under: "/f.txt?many=") >= 5)
        #expect(first.sessionCount == 1, "one h2 connection to each backend")
        #expect(second.sessionCount == 1)
    }

    @Test("A reload that adds a backend spreads the streams over it once its connection is up; one that takes a backend out sends it nothing more on the connection it kept")
    func reloadChangesTheBackends() async throws {
        let pki = try TestPKI(host: "api.test")
        let (first, second) = try await startBackends(pki)
        defer { first.process.kill(); second.process.kill() }
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("tollgate.yaml")
        func write(_ targets: [Int]) throws { try writeGateway(config, in: directory, targets: targets.map(String.init), roots: pki.caFile) }
        try write([first.port])
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 2)
        defer { served.child.kill() }
        let gateway = try served.port("reverse")
        func get(_ prefix: String, _ count: Int) async throws {
            for index in 0..<count {
                let response = try await request("GET /f.txt?\(prefix)=\(index) HTTP/1.1\r\nHost: gateway\r\n\r\n", port: gateway)
                #expect(response.status == 200, "\(response.bodyText)")
            }
            try await eventually("the backends logged the requests") {
                requests(first, under: "/f.txt?\(prefix)=") + requests(second, under: "/f.txt?\(prefix)=") == count
            }
        }
        func reload(_ round: Int) async throws {
            served.child.send(SIGHUP)
            try await eventually("reload \(round)") {
                served.child.standardError.components(separatedBy: "configuration reloaded").count == round + 1
            }
        }
        try await get("one", 4)
        #expect(requests(first, under: "/f.txt?one=") == 4)

        // A backend added: the kept h2 connection to the first no longer takes every stream.
        try write([first.port, second.port])
        try await reload(1)
        // Until the gateway's connection to the added backend is up, streams go to the kept one
        // (how long that takes depends on the machine's load): counted once it has served one.
        var warming = 0
        while requests(second, under: "/f.txt?warm=") == 0, warming < 40 {
            _ = try await request("GET /f.txt?warm=\(warming) HTTP/1.1\r\nHost: gateway\r\n\r\n", port: gateway)
            warming += 1
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(requests(second, under: "/f.txt?warm=") > 0, "the added backend was never used")
        try await get("two", 8)
        #expect(requests(second, under: "/f.txt?two=") >= 3, "\(requests(second, under: "/f.txt?two="))")
        #expect(requests(first, under: "/f.txt?two=") >= 3, "\(requests(first, under: "/f.txt?two="))")

        // The first taken out: none of the next requests reaches it.
        try write([second.port])
        try await reload(2)
        try await get("three", 6)
        #expect(requests(first, under: "/f.txt?three=") == 0)
        #expect(requests(second, under: "/f.txt?three=") == 6)
    }
}

/// `connect-to-check`: the gateway makes a TCP connection to each target on its own, so a target
/// that is off is passed over before a request meets it, and taken back once it accepts again.
@Suite(
    "connect-to-check: active health checks of the targets (the built executable)", .timeLimit(.minutes(1)),
    .enabled(if: tollgateBinary != nil && NGINXOrigin.isInstalled)
)
struct ConnectToCheckTests {
    /// `/upstreams`' entry for `target`, once it says `down` is `down`.
    private func awaitDown(_ down: Bool, target: String, admin: Int) async throws -> String {
        var listing = ""
        for _ in 0..<100 {
            listing = try await request("GET /upstreams HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: admin).bodyText
            if listing.contains("\"down\":\(down),") && listing.contains("\"target\":\"\(target)\"") {
                let entry = listing.components(separatedBy: "{").first { $0.contains("\"target\":\"\(target)\"") } ?? ""
                if entry.contains("\"down\":\(down),") { return listing }
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("\(target) never became down: \(down): \(listing)")
        return listing
    }

    /// `DIRECTORY/tollgate.yaml`: a reverse listener for `https://api.test` over `targets` (ports
    /// on 127.0.0.1, HTTP/1.1, trusted by `roots`) checked as `check` says, and an admin listener;
    /// then the built executable serving it.
    private func startGateway(in directory: URL, targets: [Int], check: String, roots: String) async throws -> (served: Served, config: URL) {
        let config = directory.appendingPathComponent("tollgate.yaml")
        try """
            listen:
              - address: "127.0.0.1:0"
                mode: reverse
                upstream: "https://api.test"
            admin:
              address: "127.0.0.1:0"
            hosts:
              - match: api.test
                http2: off
                connect-to: [\(targets.map { "\"127.0.0.1:\($0)\"" }.joined(separator: ", "))]
                connect-to-check: \(check)
                trust: { roots: "\(roots)" }
            """.write(to: config, atomically: true, encoding: .utf8)
        return (try await Served.start(["--config", config.path], directory: directory, lines: 2), config)
    }

    @Test("A target nobody listens on is down before any request; once something accepts there it is up again; requests go to the one that answers")
    func checksMarkTargets() async throws {
        let pki = try TestPKI(host: "api.test")
        let backend = try await NGINXOrigin.start(pki: pki, keepaliveRequests: 1)
        defer { backend.stop() }
        let off = ClosedPort().port
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (served, config) = try await startGateway(in: directory, targets: [off, backend.port], check: "200ms", roots: pki.caFile)
        defer { served.child.kill() }
        let admin = try served.port("admin")

        // No request yet: the check alone found the target that is off.
        _ = try await awaitDown(true, target: "127.0.0.1:\(off)", admin: admin)
        _ = try await awaitDown(false, target: "127.0.0.1:\(backend.port)", admin: admin)
        #expect(served.child.standardError.contains("a connect-to target failed"), "\(served.child.standardError)")
        // Every request goes to the backend that answers, none tries the one that is off first.
        for index in 0..<4 {
            let response = try await request("GET /c/\(index) HTTP/1.1\r\nHost: gateway\r\n\r\n", port: try served.port("reverse"))
            #expect(response.status == 200, "\(response.bodyText)")
        }
        #expect(backend.accessLog.count == 4)

        // Something accepts on the port now: the next check takes the target back.
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: "127.0.0.1", port: off)
            .get()
        defer { listener.close(promise: nil) }
        _ = try await awaitDown(false, target: "127.0.0.1:\(off)", admin: admin)
        try await eventually("the target's return is said") { served.child.standardError.contains("a connect-to target answers again") }

        // A reload that takes the target out of the rules takes it out of the listing.
        try String(contentsOf: config, encoding: .utf8)
            .replacingOccurrences(of: "[\"127.0.0.1:\(off)\", \"127.0.0.1:\(backend.port)\"]", with: "[\"127.0.0.1:\(backend.port)\"]")
            .write(to: config, atomically: true, encoding: .utf8)
        served.child.send(SIGHUP)
        try await eventually("the reload") { served.child.standardError.contains("configuration reloaded") }
        var listing = ""
        for _ in 0..<100 {
            listing = try await request("GET /upstreams HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: admin).bodyText
            if !listing.contains("127.0.0.1:\(off)") { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(!listing.contains("127.0.0.1:\(off)"), "\(listing)")
        #expect(listing.contains("\"target\":\"127.0.0.1:\(backend.port)\""), "\(listing)")
    }

    @Test("HTTP checks over TLS: a backend answering 503 and one whose certificate the rule does not trust are down before any request, with why; requests go to the healthy one; the 503 one is back once it answers 200")
    func httpChecksOverTLS() async throws {
        let pki = try TestPKI(host: "api.test")
        let stranger = try TestPKI(host: "api.test")
        let toggles = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: toggles) }
        // nginx's workers may run as another user: they must be able to look for the file.
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: toggles.path)
        let down = toggles.appendingPathComponent("down")
        try Data().write(to: down)
        let health = "location = /healthz { if (-f \(down.path)) { return 503 \"down\\n\"; } return 200 \"ok\\n\"; }"
        let healthy = try await NGINXOrigin.start(pki: pki, keepaliveRequests: 1, locations: "location = /healthz { return 200 \"ok\\n\"; }")
        defer { healthy.stop() }
        let failing = try await NGINXOrigin.start(pki: pki, keepaliveRequests: 1, locations: health)
        defer { failing.stop() }
        let untrusted = try await NGINXOrigin.start(pki: stranger, keepaliveRequests: 100)
        defer { untrusted.stop() }
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (served, _) = try await startGateway(
            in: directory, targets: [healthy.port, failing.port, untrusted.port],
            check: "{ interval: 200ms, tls: true, request: GET /healthz }", roots: pki.caFile
        )
        defer { served.child.kill() }
        let admin = try served.port("admin")

        // No request yet: the checks alone found the two that would fail one.
        var listing = try await awaitDown(true, target: "127.0.0.1:\(failing.port)", admin: admin)
        listing = try await awaitDown(true, target: "127.0.0.1:\(untrusted.port)", admin: admin)
        listing = try await awaitDown(false, target: "127.0.0.1:\(healthy.port)", admin: admin)
        #expect(listing.contains("\"last_check\":\"GET /healthz answered 503\",\"target\":\"127.0.0.1:\(failing.port)\""), "\(listing)")
        #expect(listing.contains("\"last_check\":\"not trusted: api.test:"), "\(listing)")
        #expect(listing.contains("\"last_check\":\"ok\",\"target\":\"127.0.0.1:\(healthy.port)\""), "\(listing)")
        #expect(served.child.standardError.contains("failed its health check"), "\(served.child.standardError)")
        // The untrusted backend's checks, every 200 ms, are not each a trust refusal in the log:
        // its going down was said once.
        try await Task.sleep(for: .milliseconds(600))
        #expect(!served.child.standardError.contains("tollgate.trust"), "\(served.child.standardError)")
        // The checks asked as a request would: over TLS for the rule's name, HTTP/1.1.
        #expect(failing.accessLog.contains { $0.contains("GET /healthz HTTP/1.1 503") }, "\(failing.accessLog)")
        #expect(untrusted.accessLog.isEmpty, "the untrusted backend's handshake was refused before a request: \(untrusted.accessLog)")

        // Every request goes to the one whose check passes: the 503 one accepts connections,
        // and a request's connection would not take it back.
        for index in 0..<6 {
            let response = try await request("GET /c/\(index) HTTP/1.1\r\nHost: gateway\r\n\r\n", port: try served.port("reverse"))
            #expect(response.status == 200, "\(response.bodyText)")
        }
        #expect(healthy.accessLog.filter { $0.contains(" /c/") }.count == 6)
        #expect(!failing.accessLog.contains { $0.contains(" /c/") })

        // Healthy again: the next check takes it back, and requests reach it (each on a new
        // connection: the backends close after one request, and connections go round).
        try FileManager.default.removeItem(at: down)
        listing = try await awaitDown(false, target: "127.0.0.1:\(failing.port)", admin: admin)
        try await eventually("the target's return is said") { served.child.standardError.contains("a connect-to target answers again") }
        for index in 0..<4 {
            let response = try await request("GET /d/\(index) HTTP/1.1\r\nHost: gateway\r\n\r\n", port: try served.port("reverse"))
            #expect(response.status == 200, "\(response.bodyText)")
        }
        #expect(failing.accessLog.contains { $0.contains(" /d/") }, "\(failing.accessLog)")
        _ = listing
    }
}
