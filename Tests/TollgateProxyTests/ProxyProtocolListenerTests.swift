import Foundation
import Testing
import TollgateHTTP
import TollgateTesting

/// `listen[].proxy-protocol: true` behind HAProxy (`mode tcp`, `send-proxy` and `send-proxy-v2`):
/// the client the proxy sees — access rules, the access log, the origin's X-Forwarded-For — is the
/// one HAProxy's header names, and only HAProxy may send a header.
@Suite(
    "PROXY protocol listeners behind HAProxy (the built executable)", .serialized, .timeLimit(.minutes(1)),
    .enabled(if: tollgateBinary != nil && haproxyBinary != nil, "needs haproxy")
)
struct ProxyProtocolListenerTests {
    /// HAProxy in `mode tcp` in front of `port`: one frontend sending PROXY v1, one v2.
    private func startHAProxy(to port: Int, directory: URL) throws -> (ChildProcess, v1Port: Int, v2Port: Int) {
        // Both held at once, so that they differ; let go before HAProxy binds them.
        let (v1Port, v2Port) = { () -> (Int, Int) in
            let reserved = (ClosedPort(), ClosedPort())
            return (reserved.0.port, reserved.1.port)
        }()
        let configuration = directory.appendingPathComponent("haproxy.cfg")
        try """
            defaults
                mode tcp
                timeout connect 5s
                timeout client 30s
                timeout server 30s
            listen v1
                bind 127.0.0.1:\(v1Port)
                server tollgate 127.0.0.1:\(port) send-proxy
            listen v2
                bind 127.0.0.1:\(v2Port)
                server tollgate 127.0.0.1:\(port) send-proxy-v2

            """.write(to: configuration, atomically: true, encoding: .utf8)
        return (try ChildProcess(try #require(haproxyBinary), ["-db", "-f", configuration.path]), v1Port, v2Port)
    }

    @Test("Through HAProxy (v1 and v2) the client is the address HAProxy received, for access.clients, the log and X-Forwarded-For; a direct connection from elsewhere is closed")
    func clientFromTheHeader() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, headers: ["Cache-Control": "no-store"], body: "for \(request.headerFields["X-Forwarded-For"] ?? "-")")
        }
        defer { origin.stop() }
        let config = directory.appendingPathComponent("tollgate.yaml")
        // HAProxy connects from 127.0.0.1; clients come from 127.0.0.2 (allowed) and 127.0.0.3 (not).
        try """
            listen:
              - address: "127.0.0.1:0"
                mode: reverse
                upstream: "http://127.0.0.1:\(origin.port)"
                proxy-protocol: true
            access:
              clients: ["127.0.0.2/32"]
              trusted-forwarders: ["127.0.0.1/32"]
            cache:
              path: "\(directory.appendingPathComponent("cache").path)"
            log: { access: "\(directory.appendingPathComponent("access.log").path)", format: json }
            """.write(to: config, atomically: true, encoding: .utf8)
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 1)
        defer { served.child.kill() }
        let tollgate = try served.port("reverse")

        let (haproxy, v1Port, v2Port) = try startHAProxy(to: tollgate, directory: directory)
        defer { haproxy.kill() }

        /// `curl` from `source` to `port`: the status and body.
        func get(from source: String, port: Int, path: String) async throws -> String {
            let result = try await ChildProcess.run(
                "/usr/bin/curl", ["-s", "--max-time", "5", "--noproxy", "*", "--interface", source, "-w", " %{http_code}", "http://127.0.0.1:\(port)\(path)"]
            )
            return result.stdout
        }
        do {
            try await eventuallyAsync("HAProxy listening", timeout: .seconds(30)) { (try? await get(from: "127.0.0.2", port: v2Port, path: "/ready"))?.hasSuffix(" 200") == true }
        } catch {
            Issue.record("HAProxy: \(haproxy.standardError); last: \((try? await get(from: "127.0.0.2", port: v2Port, path: "/ready")) ?? "-"); tollgate: \(served.child.standardError)")
            throw error
        }

        #expect(try await get(from: "127.0.0.2", port: v1Port, path: "/v1") == "for 127.0.0.2 200")
        #expect(try await get(from: "127.0.0.2", port: v2Port, path: "/v2") == "for 127.0.0.2 200")
        let denied = try await get(from: "127.0.0.3", port: v2Port, path: "/denied")
        #expect(denied.hasSuffix(" 403") && denied.contains("client 127.0.0.3 is not allowed"), "\(denied)")
        // Straight to the listener from an address that is not a trusted forwarder: closed unanswered.
        #expect(try await get(from: "127.0.0.2", port: tollgate, path: "/direct") == " 000")

        let logFile = directory.appendingPathComponent("access.log")
        try await eventually("the refusal logged") {
            ((try? String(contentsOf: logFile, encoding: .utf8)) ?? "").contains("/denied")
        }
        let log = try String(contentsOf: logFile, encoding: .utf8)
        #expect(log.contains(#""client":"127.0.0.2","method":"GET","target":"/v1""#), "\(log)")
        #expect(log.contains(#""client":"127.0.0.3","method":"GET","target":"/denied""#), "\(log)")
        #expect(!log.contains("/direct"))
        #expect(served.child.standardError.contains("a PROXY protocol header is believed only from those"), "\(served.child.standardError)")
    }

    @Test("A TLS listener behind HAProxy passing TLS through (send-proxy-v2): the handshake after the header, the client HAProxy received")
    func tlsAfterTheHeader() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, body: "for \(request.headerFields["X-Forwarded-For"] ?? "-")")
        }
        defer { origin.stop() }
        let pki = try TestPKI(host: "127.0.0.1")
        let files = try pki.writeServerFiles(in: directory)
        let config = directory.appendingPathComponent("tollgate.yaml")
        try """
            listen:
              - address: "127.0.0.1:0"
                mode: reverse
                upstream: "http://127.0.0.1:\(origin.port)"
                proxy-protocol: true
                tls: { certificate: "\(files.certificate)", key: "\(files.key)" }
            access:
              clients: ["127.0.0.0/8"]
              trusted-forwarders: ["127.0.0.1/32"]
            cache:
              path: "\(directory.appendingPathComponent("cache").path)"
            log: { access: off }
            """.write(to: config, atomically: true, encoding: .utf8)
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 1)
        defer { served.child.kill() }
        let (haproxy, _, v2Port) = try startHAProxy(to: try served.port("reverse"), directory: directory)
        defer { haproxy.kill() }
        func get() async throws -> String {
            try await ChildProcess.run(
                "/usr/bin/curl",
                ["-s", "--max-time", "5", "--noproxy", "*", "--interface", "127.0.0.2", "--cacert", pki.caFile, "-w", " %{http_code}", "https://127.0.0.1:\(v2Port)/tls"]
            ).stdout
        }
        do {
            try await eventuallyAsync("served through HAProxy", timeout: .seconds(30)) { (try? await get())?.hasSuffix(" 200") == true }
        } catch {
            Issue.record("HAProxy: \(haproxy.standardError); tollgate: \(served.child.standardError)")
            throw error
        }
        #expect(try await get() == "for 127.0.0.2 200")

        // The header and the ClientHello in one segment (HAProxy sends them apart or together, as
        // the client's bytes come): the handshake must go on with the bytes after the header.
        let together = try await ChildProcess.run(
            "/usr/bin/python3",
            [
                "-c",
                """
                import socket, ssl, sys
                context = ssl.create_default_context(cafile=sys.argv[2])
                incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
                tls = context.wrap_bio(incoming, outgoing, server_hostname="127.0.0.1")
                try:
                    tls.do_handshake()
                except ssl.SSLWantReadError:
                    pass
                connection = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
                connection.sendall(b"PROXY TCP4 127.0.0.2 127.0.0.1 40000 443\\r\\n" + outgoing.read())
                print("answered" if connection.recv(65536) else "closed")
                """,
                String(try served.port("reverse")), pki.caFile,
            ]
        )
        #expect(together.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "answered", "\(together.stdout) \(together.stderr)")
    }
}
