import Foundation
import NIOCore
import NIOPosix
import Testing
import TollgateCache
import TollgateHTTP
import TollgateProxy
import TollgateTesting

/// The built `tollgate` executable: next to the test bundle in the build products directory,
/// else `.build/debug/tollgate` of the package this file belongs to.
let tollgateBinary: String? = TollgateBinary.path

@Suite(
    "tollgate serve (the built executable)",
    .serialized,
    .timeLimit(.minutes(1)),
    .enabled(if: tollgateBinary != nil, "the tollgate executable was not found next to the tests or in .build/debug")
)
struct ServeCommandTests {
    @Test("serve --listen 127.0.0.1:0 prints its listening line, proxies a request, and exits 0 on SIGTERM")
    func serveProxiesAndStopsOnSIGTERM() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.send(status: 200, body: "through the binary")
        }
        defer { origin.stop() }
        let served = try await Served.start(["--listen", "127.0.0.1:0"], directory: directory, lines: 1)
        defer { served.child.kill() }
        let firstLine = try #require(served.child.standardOutput.split(separator: "\n").first)
        #expect(firstLine.wholeMatch(of: #/listening on 127\.0\.0\.1:(\d+) \(forward\)/#) != nil, "\(firstLine)")
        let port = try served.port("forward")
        #expect(port != 0)
        #expect(served.listeners.allSatisfy { $0.mode == "forward" || $0.mode == "admin" })

        let response = try await request("GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: port)
        #expect(response.status == 200)
        #expect(response.bodyText == "through the binary")

        let printed = served.child.standardOutput
        served.child.terminate()
        let status = try await served.child.waitForExit()
        #expect(status == 0)
        #expect(served.child.standardOutput == printed, "nothing more on stdout")
        #expect(served.child.standardError.contains("\"GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\" 200 18"))
        // Where it keeps things, said once at start (XDG_CACHE_HOME is the test's directory).
        let places = try #require(served.child.standardError.split(separator: "\n").first { $0.hasPrefix("tollgate 0.") })
        #expect(places.contains("cache \(directory.appendingPathComponent("xdg").path)/tollgate (shared, 1 GiB)"), "\(places)")
        #expect(places.contains("; data ") && places.hasSuffix("; access log stderr (combined)"), "\(places)")
        let version = try await ChildProcess.run(try #require(tollgateBinary), ["--version"])
        #expect(version.status == 0)
        #expect(places.hasPrefix("tollgate \(version.stdout.trimmingCharacters(in: .whitespacesAndNewlines)):"))
    }

    @Test(
        "serve --config: forward and reverse listeners, JSON access log, limits, admin /healthz, /tasks and /config/reload, SIGHUP"
    )
    func serveWithConfiguration() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try await LoopbackOrigin.start { request, respond in
            let delay: TimeAmount = request.path == "/slow" ? .milliseconds(1500) : .zero
            respond.after(delay) { respond.send(status: 200, body: "origin saw \(request.target)") }
        }
        defer { origin.stop() }
        let file = directory.appendingPathComponent("tollgate.yaml")
        let logFile = directory.appendingPathComponent("access.log")
        func writeConfiguration(maxHeaderBytes: String, broken: Bool = false, logFormat: String = "json") throws {
            let yaml = """
                listen:
                  - address: "127.0.0.1:0"
                    mode: forward
                  - address: "127.0.0.2:0"
                    mode: reverse
                    upstream: "http://127.0.0.1:\(origin.port)"
                admin:
                  address: "127.0.0.3:0"
                cache:
                  path: "\(directory.appendingPathComponent("cache").path)"
                access:
                  clients: ["127.0.0.0/8"]
                  connect-ports: [443]
                  destinations:
                    - { deny: "10.0.0.0/8" }
                    - { allow: "all" }
                limits:
                  max-header-bytes: \(maxHeaderBytes)
                  \(broken ? "max-headers: lots" : "max-headers: 50")
                log:
                  access: "\(logFile.path)"
                  format: \(logFormat)

                """
            try Data(yaml.utf8).write(to: file)
        }
        try writeConfiguration(maxHeaderBytes: "2KiB")
        let served = try await Served.start(["--config", file.path], directory: directory, lines: 3)
        defer { served.child.kill() }
        #expect(served.listeners.map(\.mode) == ["forward", "reverse", "admin"], "\(served.child.standardOutput)")
        let forward = try served.port("forward")
        let reverse = try served.port("reverse")
        let admin = try served.port("admin")

        // Forward and reverse listeners.
        let forwarded = try await request(
            "GET http://127.0.0.1:\(origin.port)/f HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
            port: forward
        )
        #expect(forwarded.bodyText == "origin saw /f")
        let reversed = try await request("GET /r?q=1 HTTP/1.1\r\nHost: gw\r\n\r\n", host: "127.0.0.2", port: reverse)
        #expect(reversed.bodyText == "origin saw /r?q=1")

        // access.destinations and access.connect-ports from the file.
        let denied = try await request("GET http://10.1.2.3/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: forward)
        #expect(denied.status == 403)
        #expect(denied.header("Tollgate-Error") == "host-denied")
        #expect(denied.bodyText.contains("access.destinations[0]"))
        let tunnel = try await request("CONNECT 127.0.0.1:\(origin.port) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: forward)
        #expect(tunnel.header("Tollgate-Error") == "connect-port-denied")

        // limits.max-header-bytes from the file.
        let big =
            "GET http://127.0.0.1:\(origin.port)/big HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: \(String(repeating: "b", count: 3000))\r\n\r\n"
        #expect(try await request(big, port: forward).status == 431)

        // The JSON access log, with rule and session.
        try await eventually("the access log lines") {
            (try? String(contentsOf: logFile, encoding: .utf8))?.split(separator: "\n").count ?? 0 >= 5
        }
        let lines = try String(contentsOf: logFile, encoding: .utf8).split(separator: "\n")
        // A line is written when its exchange ends: the next request's can come first (under TSan).
        let records = try lines.compactMap { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let first = try #require(records.first { $0["target"] as? String == "http://127.0.0.1:\(origin.port)/f" })
        #expect(first["status"] as? Int == 200)
        #expect(first["session"] as? String == "default")
        #expect(first["rule"] as? String == "-")

        // Admin: /healthz, and /tasks while a slow request is in flight.
        let health = try await request("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", host: "127.0.0.3", port: admin)
        #expect(health.status == 200)
        #expect(health.bodyText == "ok\n")
        // A web page cannot drive it: a cross-site request carries Origin, a rebinding one a name.
        let fromPage = try await request(
            "POST /config/reload HTTP/1.1\r\nHost: 127.0.0.3:\(admin)\r\nOrigin: https://evil.example\r\nContent-Length: 0\r\n\r\n",
            host: "127.0.0.3", port: admin
        )
        #expect(fromPage.status == 403)
        #expect(fromPage.bodyText.contains("Origin: https://evil.example"))
        let rebound = try await request("GET /tasks HTTP/1.1\r\nHost: evil.example:\(admin)\r\n\r\n", host: "127.0.0.3", port: admin)
        #expect(rebound.status == 403)
        let named = try await request("GET /healthz HTTP/1.1\r\nHost: localhost:\(admin)\r\n\r\n", host: "127.0.0.3", port: admin)
        #expect(named.status == 200)
        let slow = try await RawClient.connect(port: forward)
        defer { slow.close() }
        try await slow.send("GET http://127.0.0.1:\(origin.port)/slow HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        try await eventually("the slow request reaches the origin") { origin.requests.contains { $0.path == "/slow" } }
        let tasks = try await request("GET /tasks HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", host: "127.0.0.3", port: admin)
        #expect(tasks.status == 200)
        #expect(tasks.header("Content-Type") == "application/json")
        let list = try #require(try JSONSerialization.jsonObject(with: Data(tasks.body)) as? [[String: Any]])
        let live = try #require(list.first { ($0["url"] as? String)?.hasSuffix("/slow") == true }, "\(tasks.bodyText)")
        #expect(live["session"] as? String == "default")
        #expect(live["kind"] as? String == "data")
        #expect(live["state"] as? String == "running")
        #expect(live["identifier"] is Int)
        #expect(live["bytes"] is Int)

        // POST /config/reload: fine (a log format change is kept as started, and it says so), then
        // a broken file (400 with FILE:LINE), then SIGHUP.
        try writeConfiguration(maxHeaderBytes: "2KiB", logFormat: "combined")
        let reloaded = try await request(
            "POST /config/reload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n",
            host: "127.0.0.3",
            port: admin
        )
        #expect(reloaded.status == 200)
        #expect(reloaded.bodyText == "reloaded\nchanged in the file but kept as started until a restart: log\n")
        try writeConfiguration(maxHeaderBytes: "2KiB", broken: true)
        let refused = try await request(
            "POST /config/reload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n",
            host: "127.0.0.3",
            port: admin
        )
        #expect(refused.status == 400)
        #expect(refused.bodyText.hasPrefix("\(file.path):19: limits.max-headers: "), "\(refused.bodyText)")
        served.child.send(SIGHUP)
        try await eventually("the SIGHUP problems on stderr") {
            served.child.standardError.contains("\(file.path):19:")
        }
        #expect(try await request(big, port: forward).status == 431, "the rules in force stay")
        try writeConfiguration(maxHeaderBytes: "64KiB")
        served.child.send(SIGHUP)
        try await eventually("the reload") { served.child.standardError.contains("configuration reloaded") }
        #expect(try await request(big, port: forward).status == 200, "the new limit is in force")
        #expect(!served.child.standardError.contains("until a restart"), "the file is back to what the proxy started with")

        served.child.terminate()
        #expect(try await served.child.waitForExit() == 0)
        try await slow.waitForClose()
        #expect(slow.responses.first?.bodyText == "origin saw /slow", "in-flight exchanges finish at shutdown")
        // The order of stopping: listeners, then the exchanges in flight, then the log, flushed last.
        let log = try String(contentsOf: logFile, encoding: .utf8)
        #expect(
            log.split(separator: "\n").contains { $0.contains("/slow\"") && $0.contains("\"status\":200") },
            "the last exchange's log line is written"
        )
    }

    @Test("serve --config with a bad file exits 1 with one FILE:LINE: KEY: line per problem")
    func badConfiguration() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("bad.yaml")
        try Data("listen:\n  - address: \"nowhere\"\nlimits:\n  max-headerz: 3\n".utf8).write(to: file)
        let binary = try #require(tollgateBinary)
        let result = try await ChildProcess.run(binary, ["serve", "--config", file.path])
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 2, "\(result.stderr)")
        #expect(lines.allSatisfy { $0.hasPrefix("\(file.path):") })
        #expect(lines.contains { $0.hasPrefix("\(file.path):4: limits.max-headerz:") })
    }

    @Test("serve --listen with --reverse URL runs one reverse listener for the benchmark")
    func reverseFromTheCommandLine() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, body: request.target)
        }
        defer { origin.stop() }
        let served = try await Served.start(
            ["--listen", "127.0.0.1:0", "--reverse", "http://127.0.0.1:\(origin.port)"],
            directory: directory,
            lines: 1
        )
        defer { served.child.kill() }
        let port = try served.port("reverse")
        let response = try await request("GET /bench?n=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: port)
        #expect(response.bodyText == "/bench?n=1")
        #expect(origin.requests.first?.headerFields["Host"] == "127.0.0.1:\(origin.port)")
        served.child.terminate()
        #expect(try await served.child.waitForExit() == 0)
    }

    @Test("Without --config, a taken admin port 9090 gives a warning and the proxy still starts")
    func adminPortTaken() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // Hold 9090 (if something else already does, that is the same situation).
        let holder = try? await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 9090).get()
        defer { holder?.close(promise: nil) }
        let served = try await Served.start(["--listen", "127.0.0.1:0"], directory: directory, lines: 1)
        defer { served.child.kill() }
        try await eventually("the warning") { served.child.standardError.contains("admin API is not running") }
        #expect(served.child.standardError.contains("127.0.0.1:9090"))
        #expect(served.listeners.map(\.mode) == ["forward"])
        served.child.terminate()
        #expect(try await served.child.waitForExit() == 0)
    }

    @Test("A proxy user's password file readable by others stops serve with exit 1")
    func loosePasswordFile() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let password = directory.appendingPathComponent("ci.pass")
        try Data("secret\n".utf8).write(to: password)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: password.path)
        let file = directory.appendingPathComponent("auth.yaml")
        try Data(
            """
            listen:
              - address: "127.0.0.1:0"
            access:
              users:
                - name: ci
                  password-file: "\(password.path)"

            """.utf8
        ).write(to: file)
        let binary = try #require(tollgateBinary)
        let result = try await ChildProcess.run(binary, ["serve", "--config", file.path])
        #expect(result.status == 1)
        #expect(result.stderr.contains("chmod 600"), "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test("serve on an address in use exits 1 naming the address")
    func addressInUse() async throws {
        let binary = try #require(tollgateBinary)
        try await withProxy { proxy in
            let result = try await ChildProcess.run(binary, ["serve", "--listen", "127.0.0.1:\(proxy.port)"])
            #expect(result.status == 1)
            #expect(result.stderr.contains("cannot listen on 127.0.0.1:\(proxy.port)"))
            #expect(result.stderr.lowercased().contains("in use"))
            #expect(result.stdout.isEmpty)
        }
    }

    @Test("Bad arguments exit 1")
    func badArguments() async throws {
        let binary = try #require(tollgateBinary)
        let badListen = try await ChildProcess.run(binary, ["serve", "--listen", "nowhere"])
        #expect(badListen.status == 1)
        #expect(badListen.stderr.hasPrefix("tollgate: --listen:"))
        let reverseAlone = try await ChildProcess.run(binary, ["serve", "--reverse", "http://127.0.0.1:1"])
        #expect(reverseAlone.status == 1)
        #expect(reverseAlone.stderr.contains("--reverse needs --listen"))
        let unknown = try await ChildProcess.run(binary, ["serve", "--bogus"])
        #expect(unknown.status == 1)
    }
}

@Suite(
    "tollgate serve with its cache (the built executable)",
    .serialized,
    .timeLimit(.minutes(1)),
    .enabled(if: tollgateBinary != nil, "the tollgate executable was not found next to the tests or in .build/debug")
)
struct ServeCacheTests {
    @Test("A reverse listener serves the second request from the LMDB cache; Cache-Status, /metrics, /cache/stats and /cache/purge agree")
    func cacheThroughTheBinary() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.send(status: 200, headers: ["Cache-Control": "max-age=300"], body: "cacheable")
        }
        defer { origin.stop() }
        let config = try writeReverseCacheConfiguration(
            in: directory, upstreamPort: origin.port, cacheLines: ["max-size: 64MiB"], more: "admin:\n  address: \"127.0.0.1:0\""
        )
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 2)
        defer { served.child.kill() }
        let port = try served.port("reverse")
        let admin = try served.port("admin")

        let first = try await request("GET /doc HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: port)
        #expect(first.status == 200)
        #expect(first.header("Cache-Status") == "tollgate; fwd=uri-miss; stored")
        let second = try await request("GET /doc HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: port)
        #expect(second.bodyText == "cacheable")
        #expect(second.header("Cache-Status") == "tollgate; hit")
        #expect(origin.requestCount == 1)

        let metrics = try await request("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: admin)
        #expect(metrics.bodyText.contains("tollgate_requests_total{cache=\"hit\"} 1"))
        #expect(metrics.bodyText.contains("tollgate_requests_total{cache=\"miss\"} 1"))
        #expect(metrics.bodyText.contains("tollgate_task_duration_seconds_count 2"))
        let stats = try await request("GET /cache/stats HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: admin)
        #expect(stats.bodyText.contains("\"entries\":1"))
        let url = "http://127.0.0.1:\(origin.port)/doc"
        let purge = try await request("POST /cache/purge?url=\(url) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n", port: admin)
        #expect(purge.bodyText == "purged 1\n")
        let third = try await request("GET /doc HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: port)
        #expect(third.header("Cache-Status") == "tollgate; fwd=uri-miss; stored")
        #expect(origin.requestCount == 2)
    }
}

extension ServeCacheTests {
    @Test("SIGKILL while bodies stream into the cache: verify stays clean and no truncated body is ever served")
    func killedWhileStoring() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // Large bodies sent slowly, so the kill lands while their cache entries are being written.
        let size = 2 << 20
        let payload = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let slow = NIOLockedValueBoxFlag()
        let origin = try await LoopbackOrigin.start { _, respond in
            guard slow.isSet else {
                respond.send(status: 200, headers: ["Cache-Control": "max-age=300"], bytes: payload)
                return
            }
            respond.sendHead(status: 200, headers: ["Cache-Control": "max-age=300", "Content-Length": String(size)])
            @Sendable func piece(_ offset: Int) {
                guard offset < size else { return }
                respond.after(.milliseconds(20)) {
                    respond.write(Array(payload[offset..<min(size, offset + 65536)]))
                    piece(offset + 65536)
                }
            }
            piece(0)
        }
        defer { origin.stop() }
        slow.set()
        let cachePath = directory.appendingPathComponent("cache").path
        let config = directory.appendingPathComponent("tollgate.yaml")
        try """
        listen:
          - address: "127.0.0.1:0"
            mode: reverse
            upstream: "http://127.0.0.1:\(origin.port)"
        cache:
          path: "\(cachePath)"
          max-size: 256MiB
        log:
          access: "off"
        """.write(to: config, atomically: true, encoding: .utf8)

        let first = try await Served.start(["--config", config.path], directory: directory, lines: 1)
        let port = try first.port("reverse")
        // A small object stored whole before the kill, and several large ones mid-stream.
        slow.clear()
        _ = try await request("GET /whole HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: port)
        slow.set()
        var clients: [RawClient] = []
        for index in 0..<4 {
            let client = try await RawClient.connect(host: "127.0.0.1", port: port)
            try await client.send("GET /big\(index) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            clients.append(client)
        }
        try await Task.sleep(for: .milliseconds(400))
        first.child.kill()
        _ = try? await first.child.waitForExit()
        for client in clients { client.close() }

        let binary = try #require(tollgateBinary)
        let verify = try await ChildProcess.run(binary, ["cache", "verify", "--cache-dir", cachePath])
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")

        slow.clear()
        let second = try await Served.start(["--config", config.path], directory: directory, lines: 1)
        defer { second.child.kill() }
        let again = try second.port("reverse")
        let whole = try await request("GET /whole HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: again)
        #expect(whole.header("Cache-Status") == "tollgate; hit")
        #expect(whole.body == payload)
        for index in 0..<4 {
            let response = try await request("GET /big\(index) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: again)
            #expect(response.body == payload, "a truncated body was served for /big\(index)")
        }
    }
}

@Suite(
    "tollgate serve applies the host rules (the built executable)",
    .serialized,
    .timeLimit(.minutes(1)),
    .enabled(if: tollgateBinary != nil, "the tollgate executable was not found next to the tests or in .build/debug")
)
struct ServePolicyDecisionTests {
    @Test("Per host: the session's redirects and headers, cache.store deny, and deny — through the running proxy")
    func hostRules() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try await LoopbackOrigin.start { request, respond in
            switch request.path {
            case "/moved": respond.send(status: 302, headers: ["Location": "/target"], body: "moved")
            default:
                respond.send(
                    status: 200, headers: ["Cache-Control": "max-age=300"],
                    body: "\(request.path) team=\(request.headerFields["X-Team"] ?? "-")"
                )
            }
        }
        defer { origin.stop() }
        let config = directory.appendingPathComponent("tollgate.yaml")
        try """
        listen:
          - address: "127.0.0.1:0"
            mode: forward
        cache:
          path: "\(directory.appendingPathComponent("cache").path)"
          max-size: 64MiB
        sessions:
          follow:
            redirects: follow
            headers: { X-Team: web }
        hosts:
          - match: "127.0.0.1:\(origin.port)"
            session: follow
            cache: { store: deny }
          - match: "localhost"
            trust: { deny: true }
        """.write(to: config, atomically: true, encoding: .utf8)
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 1)
        defer { served.child.kill() }
        let port = try served.port("forward")
        let base = "http://127.0.0.1:\(origin.port)"

        // redirects: follow and the session's headers.
        let followed = try await request("GET \(base)/moved HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: port)
        #expect(followed.status == 200)
        #expect(followed.bodyText == "/target team=web")
        // cache.store: deny — fetched twice, never stored.
        let first = try await request("GET \(base)/doc HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: port)
        let second = try await request("GET \(base)/doc HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: port)
        // (Cache-Status goes out with the head, before willCacheResponse is asked at the end.)
        #expect(first.status == 200)
        #expect(second.header("Cache-Status")?.contains("hit") == false)
        #expect(origin.requests.filter { $0.path == "/doc" }.count == 2)
        // deny: refused before any connection.
        let denied = try await request("GET http://localhost:\(origin.port)/doc HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: port)
        #expect(denied.status == 403)
        #expect(denied.header("Tollgate-Error") == "host-denied")
        #expect(origin.requests.filter { $0.path == "/doc" }.count == 2)
        // The access log names the rule and session.
        try await eventually("log lines") { served.child.standardError.contains("\"follow\"") }
        #expect(served.child.standardError.contains("hosts[0]"))
    }
}

extension ServeCacheTests {
    @Test("Offline: a stored response is served although its host name does not resolve; an unstored one is 502")
    func offlineHostServedFromCache() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let cachePath = directory.appendingPathComponent("cache").path
        let url = HTTPURL(string: "http://tollgate-offline.invalid/pkg.tar")!
        do {
            let store = try CacheStore(options: CacheStoreOptions(path: cachePath, maxSize: 64 << 20))
            try store.store(
                key: CacheKey(url: url), request: TollgateHTTP.HTTPRequestHead(url: url),
                response: TollgateHTTP.HTTPResponseHead(status: 200, headerFields: ["Cache-Control": "max-age=3600", "Date": HTTPDate.format(Date())]),
                body: ByteBuffer(string: "from the cache"), requestTime: Date(), responseTime: Date()
            )
            store.close()
        }
        let config = directory.appendingPathComponent("tollgate.yaml")
        try """
        listen:
          - address: "127.0.0.1:0"
            mode: forward
        cache:
          path: "\(cachePath)"
          max-size: 64MiB
        """.write(to: config, atomically: true, encoding: .utf8)
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 1)
        defer { served.child.kill() }
        let port = try served.port("forward")
        let hit = try await request("GET \(url.absoluteString) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: port)
        #expect(hit.status == 200)
        #expect(hit.bodyText == "from the cache")
        #expect(hit.header("Cache-Status") == "tollgate; hit")
        let miss = try await request("GET http://tollgate-offline.invalid/other HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: port)
        #expect(miss.status == 502)
        #expect(miss.header("Tollgate-Error") == "upstream-unreachable")
    }
}
