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

    static func start() async throws -> Chain {
        let directory = try temporaryDirectory()
        let pki = try TestPKI(commonName: "Chained Origin CA", host: "localhost")
        let origin = try await LoopbackOrigin.start(tls: pki.serverConfiguration) { request, respond in
            respond.send(status: 200, headers: ["Cache-Control": "max-age=300"], body: "origin says \(request.target)")
        }
        let parentConfig = directory.appendingPathComponent("parent.yaml")
        try """
        listen:
          - address: "127.0.0.1:0"
        access:
          connect-ports: [\(origin.port)]
        cache:
          path: "\(directory.appendingPathComponent("parent-cache").path)"
        """.write(to: parentConfig, atomically: true, encoding: .utf8)
        let parent = try await Served.start(["--config", parentConfig.path], directory: directory, lines: 1)
        return Chain(directory: directory, pki: pki, origin: origin, parent: parent)
    }

    /// Starts the child with `hosts` (YAML lines under `hosts:`) and `more` (top-level YAML).
    func child(hosts: String = "[]", more: String = "", extraPorts: [Int] = []) async throws -> Served {
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
        hosts: \(hosts)
        \(more)
        """.write(to: config, atomically: true, encoding: .utf8)
        return try await Served.start(["--config", config.path], directory: directory, lines: 1)
    }

    func stop() {
        parent.child.kill()
        origin.stop()
        try? FileManager.default.removeItem(at: directory)
    }
}

private func curl(_ url: String, proxy: Int, cacert: String) async throws -> (status: Int32, stdout: String, stderr: String) {
    try await ChildProcess.run(
        "/usr/bin/curl", ["-sS", "-i", "--max-time", "20", "--cacert", cacert, "-x", "http://127.0.0.1:\(proxy)", url]
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
        let caDirectory = chain.directory.appendingPathComponent("ca").path
        let created = try await ChildProcess.run(try #require(tollgateBinary), ["ca", "init", "--dir", caDirectory])
        #expect(created.status == 0, "ca init: \(created.stderr)")
        let child = try await chain.child(
            hosts: """

                  - match: "localhost"
                    intercept: true
                    trust:
                      roots: ["\(chain.pki.caFile)"]
                """,
            more: "interception:\n  ca-dir: \"\(caDirectory)\""
        )
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
}
