import Foundation
import Testing
import TollgateHTTP
import TollgateTesting

/// Two running proxies: a developer's (the child) whose sessions name the other (the parent, a
/// cache tier's front) as `upstream-proxy`, and a TLS origin for `localhost` they both may CONNECT to.
private struct Chain {
    let directory: URL
    let pki: TestPKI
    let origin: LoopbackOrigin
    let parent: Served

    /// With `parentPassword`, the parent asks for user `ci` with that password (a file, 0600).
    static func start(parentPassword: String? = nil) async throws -> Chain {
        let directory = try temporaryDirectory()
        let pki = try TestPKI(commonName: "Chained Origin CA", host: "localhost")
        let origin = try await LoopbackOrigin.start(tls: pki.serverConfiguration) { request, respond in
            respond.send(status: 200, headers: ["Cache-Control": "max-age=300"], body: "origin says \(request.target)")
        }
        let parentConfig = directory.appendingPathComponent("parent.yaml")
        var users = ""
        if let parentPassword {
            let file = directory.appendingPathComponent("parent-ci.pass")
            try Data((parentPassword + "\n").utf8).write(to: file)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
            users = "\n  users: [{ name: ci, password-file: \"\(file.path)\" }]"
        }
        try """
        listen:
          - address: "127.0.0.1:0"
        access:
          connect-ports: [\(origin.port)]\(users)
        cache:
          path: "\(directory.appendingPathComponent("parent-cache").path)"
        """.write(to: parentConfig, atomically: true, encoding: .utf8)
        let parent = try await Served.start(["--config", parentConfig.path], directory: directory, lines: 1)
        return Chain(directory: directory, pki: pki, origin: origin, parent: parent)
    }

    /// Starts the child with `hosts` (YAML lines under `hosts:`) and `more` (top-level YAML).
    /// `session` is YAML lines added under `sessions.default` (indented by four spaces).
    func child(hosts: String = "[]", more: String = "", session: String = "", extraPorts: [Int] = []) async throws -> Served {
        let config = directory.appendingPathComponent("child-\(UUID().uuidString).yaml")
        try """
        listen:
          - address: "127.0.0.1:0"
        access:
          connect-ports: [\(([origin.port] + extraPorts).map(String.init).joined(separator: ", "))]
        cache:
          path: "\(directory.appendingPathComponent("child-cache").path)"
        sessions:
          default:
            upstream-proxy: "http://127.0.0.1:\(try parent.port("forward"))"
        \(session)
        hosts: \(hosts)
        \(more)
        """.write(to: config, atomically: true, encoding: .utf8)
        return try await Served.start(["--config", config.path], directory: directory, lines: 1)
    }

    /// A child that intercepts `localhost` (trusting the origin's CA), with a local CA made by
    /// `tollgate ca init`; `session` as in ``child(hosts:more:session:extraPorts:)``.
    func interceptingChild(session: String = "") async throws -> (Served, caDirectory: String) {
        let caDirectory = directory.appendingPathComponent("ca").path
        let created = try await ChildProcess.run(try #require(tollgateBinary), ["ca", "init", "--dir", caDirectory])
        #expect(created.status == 0, "ca init: \(created.stderr)")
        let served = try await child(
            hosts: """

                  - match: "localhost"
                    intercept: true
                    trust:
                      roots: ["\(pki.caFile)"]
                """,
            more: "interception:\n  ca-dir: \"\(caDirectory)\"",
            session: session
        )
        return (served, caDirectory)
    }

    func stop() {
        parent.child.kill()
        origin.stop()
        try? FileManager.default.removeItem(at: directory)
    }
}

private func curl(_ url: String, proxy: Int, cacert: String) async throws -> (status: Int32, stdout: String, stderr: String) {
    try await ChildProcess.run(
        "/usr/bin/curl", ["-sS", "-i", "--http1.1", "--max-time", "20", "--cacert", cacert, "-x", "http://127.0.0.1:\(proxy)", url]
    )
}

@Suite(
    "CONNECT tunnels through an upstream proxy (two running proxies)",
    .serialized,
    .timeLimit(.minutes(1)),
    .enabled(if: tollgateBinary != nil && FileManager.default.isExecutableFile(atPath: "/usr/bin/curl"))
)
struct ChainedTunnelTests {
    @Test("A client's CONNECT to the child is opened through the parent, by name")
    func tunnelFollowsTheParent() async throws {
        let chain = try await Chain.start()
        defer { chain.stop() }
        let child = try await chain.child()
        defer { child.child.kill() }
        let url = "https://localhost:\(chain.origin.port)/doc"
        let fetched = try await curl(url, proxy: try child.port("forward"), cacert: chain.pki.caFile)
        #expect(fetched.status == 0, "curl: \(fetched.stderr)")
        #expect(fetched.stdout.contains("origin says /doc"), "\(fetched.stdout)")
        // Both proxies log the tunnel when it ends: the child's client's, and the child's own
        // CONNECT at the parent.
        try await eventually("the parent logs the CONNECT") {
            chain.parent.child.standardError.contains("\"CONNECT localhost:\(chain.origin.port) HTTP/1.1\" 200")
        }
        try await eventually("the child logs the CONNECT") {
            child.child.standardError.contains("\"CONNECT localhost:\(chain.origin.port) HTTP/1.1\" 200")
        }
        #expect(chain.origin.requestCount == 1)
    }

    @Test("A tunnel the parent refuses is answered 502 with the parent's status line, and nothing is reached")
    func parentRefuses() async throws {
        let chain = try await Chain.start()
        defer { chain.stop() }
        let echo = try await LoopbackEchoServer.start()
        defer { echo.stop() }
        // The child may CONNECT to the echo server's port; the parent may not.
        let child = try await chain.child(extraPorts: [echo.port])
        defer { child.child.kill() }
        let refused = try await request(
            "CONNECT localhost:\(echo.port) HTTP/1.1\r\nHost: localhost:\(echo.port)\r\n\r\n", port: try child.port("forward")
        )
        #expect(refused.status == 502)
        #expect(refused.header("Tollgate-Error") == "upstream-unreachable")
        #expect(refused.bodyText.contains("refused CONNECT localhost:\(echo.port): HTTP/1.1 403"), "\(refused.bodyText)")
        #expect(echo.receivedBytes.isEmpty)
    }

    @Test("An intercepted host's requests reach the origin through a tunnel at the parent")
    func interceptedThroughTheParent() async throws {
        let chain = try await Chain.start()
        defer { chain.stop() }
        let (child, caDirectory) = try await chain.interceptingChild()
        defer { child.child.kill() }
        let url = "https://localhost:\(chain.origin.port)/intercepted"
        let first = try await curl(url, proxy: try child.port("forward"), cacert: caDirectory + "/ca.pem")
        #expect(first.status == 0, "curl: \(first.stderr)")
        #expect(first.stdout.contains("origin says /intercepted"))
        #expect(first.stdout.contains("Cache-Status: tollgate; fwd=uri-miss; stored"), "\(first.stdout)")
        let second = try await curl(url, proxy: try child.port("forward"), cacert: caDirectory + "/ca.pem")
        #expect(second.stdout.contains("Cache-Status: tollgate; hit"), "\(second.stdout)")
        #expect(chain.origin.requestCount == 1)
        // The child's session reached the origin through a CONNECT at the parent (logged when the
        // child's pooled connection closes: at its shutdown).
        child.child.send(SIGTERM)
        _ = try await child.child.waitForExit()
        try await eventually("the parent logs the child's CONNECT") {
            chain.parent.child.standardError.contains("\"CONNECT localhost:\(chain.origin.port) HTTP/1.1\" 200")
        }
    }

    @Test("A parent that asks for credentials gets the child's upstream-proxy-credentials: CONNECT, intercepted and plain requests pass")
    func parentAsksForCredentials() async throws {
        let chain = try await Chain.start(parentPassword: "s3cret")
        defer { chain.stop() }
        let passwordFile = chain.directory.appendingPathComponent("child-parent.pass")
        try Data("s3cret\n".utf8).write(to: passwordFile)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: passwordFile.path)
        let plain = try await LoopbackOrigin.start { request, respond in respond.send(status: 200, body: "plain \(request.target)") }
        defer { plain.stop() }
        let (child, caDirectory) = try await chain.interceptingChild(
            session: "    upstream-proxy-credentials: { user: ci, password-file: \"\(passwordFile.path)\" }"
        )
        defer { child.child.kill() }
        let proxy = try child.port("forward")
        // A tunnel the child does not intercept: its CONNECT goes through the parent, with the
        // credential. (The origin's certificate names localhost only: curl is told not to check it.)
        let tunnelled = try await ChildProcess.run(
            "/usr/bin/curl", ["-sS", "-i", "-k", "--max-time", "20", "-x", "http://127.0.0.1:\(proxy)", "https://127.0.0.1:\(chain.origin.port)/tunnel"]
        )
        #expect(tunnelled.status == 0, "curl: \(tunnelled.stderr)")
        #expect(tunnelled.stdout.contains("origin says /tunnel"), "\(tunnelled.stdout)")
        // A plain request: absolute form to the parent, with the credential.
        let fetched = try await curl("http://127.0.0.1:\(plain.port)/plain", proxy: proxy, cacert: chain.pki.caFile)
        #expect(fetched.stdout.contains("plain /plain"), "\(fetched.stdout)")
        #expect(plain.requests.first?.headerFields["Proxy-Authorization"] == nil)
        // An intercepted host: the child's own session opens its CONNECT through the parent.
        let intercepted = try await curl("https://localhost:\(chain.origin.port)/intercepted", proxy: proxy, cacert: caDirectory + "/ca.pem")
        #expect(intercepted.status == 0, "curl: \(intercepted.stderr)")
        #expect(intercepted.stdout.contains("origin says /intercepted"), "\(intercepted.stdout)")
        child.child.send(SIGTERM)
        _ = try await child.child.waitForExit()
        try await eventually("the parent logs the authenticated CONNECTs") {
            chain.parent.child.standardError.contains("\"CONNECT localhost:\(chain.origin.port) HTTP/1.1\" 200")
                && chain.parent.child.standardError.contains("\"CONNECT 127.0.0.1:\(chain.origin.port) HTTP/1.1\" 200")
        }
        #expect(chain.parent.child.standardError.contains("\"GET http://127.0.0.1:\(plain.port)/plain HTTP/1.1\" 200"))
        // The secret is in neither proxy's output.
        #expect(!chain.parent.child.standardError.contains("s3cret") && !chain.parent.child.standardError.contains("czNjcmV0"))
        #expect(!child.child.standardError.contains("s3cret") && !child.child.standardError.contains("czNjcmV0"))
    }

    @Test(
        "A plain request the parent answers 407 (no credentials set, or refused ones) is a 502 upstream-unreachable saying so, not the parent's 407",
        arguments: [nil, "wrong"] as [String?]
    )
    func parentRefusalIsAnUpstreamFault(password: String?) async throws {
        let chain = try await Chain.start(parentPassword: "s3cret")
        defer { chain.stop() }
        var session = ""
        if let password {
            let passwordFile = chain.directory.appendingPathComponent("child-parent.pass")
            try Data((password + "\n").utf8).write(to: passwordFile)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: passwordFile.path)
            session = "    upstream-proxy-credentials: { user: ci, password-file: \"\(passwordFile.path)\" }"
        }
        let plain = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "plain") }
        defer { plain.stop() }
        let (child, _) = try await chain.interceptingChild(session: session)
        defer { child.child.kill() }
        let fetched = try await curl("http://127.0.0.1:\(plain.port)/plain", proxy: try child.port("forward"), cacert: chain.pki.caFile)
        #expect(fetched.stdout.hasPrefix("HTTP/1.1 502"), "\(fetched.stdout)")
        #expect(fetched.stdout.contains("Tollgate-Error: upstream-unreachable"), "\(fetched.stdout)")
        #expect(fetched.stdout.contains("asks for credentials (407"), "\(fetched.stdout)")
        let why = password == nil ? "has no upstream-proxy-credentials" : "did not accept the session's upstream-proxy-credentials"
        #expect(fetched.stdout.contains(why), "\(fetched.stdout)")
        #expect(!fetched.stdout.lowercased().contains("proxy-authenticate"), "\(fetched.stdout)")
        #expect(plain.requests.isEmpty)
    }
}
