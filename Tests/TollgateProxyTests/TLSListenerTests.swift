import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing
import TollgateHTTP
import TollgateTLS
import TollgateTesting

/// A directory holding a test CA's leaf for 127.0.0.1 (`srv.pem`, `srv.key`), leaves for
/// `a.test` and `*.b.test`, and a configuration with one TLS listener written by ``write(_:)``.
private struct TLSListenerSetup {
    let directory: URL
    let pki: TestPKI
    let named: Identity
    let wildcard: Identity

    init() throws {
        directory = try temporaryDirectory()
        pki = try TestPKI(commonName: "Listener CA", host: "127.0.0.1")
        named = try pki.authority.issueLeaf(for: "a.test")
        wildcard = try pki.authority.issueLeaf(for: "*.b.test")
        try writeIdentity(pki.server, "srv")
        try writeIdentity(named, "a")
        try writeIdentity(wildcard, "b")
    }

    /// Writes `NAME.pem` and `NAME.key` (mode 0600), replacing what was there.
    func writeIdentity(_ identity: Identity, _ name: String) throws {
        try identity.certificate.pemString.write(to: directory.appendingPathComponent("\(name).pem"), atomically: true, encoding: .utf8)
        try identity.privateKey.write(toPEMFile: path("\(name).key"), overwrite: true)
    }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// A leaf for 127.0.0.1 from `intermediate` written as `gw.pem` (the leaf, then the
    /// intermediate, as public CAs issue: the intermediate signs the OCSP responses, and clients
    /// compute a response's CertID from it) and `gw.key`.
    func writeGatewayIdentity(issuedBy intermediate: CertificateAuthority, ocspResponder: String? = nil) throws -> Identity {
        let leaf = try intermediate.issueLeaf(for: "127.0.0.1", ocspResponder: ocspResponder)
        try leaf.certificateChain.map(\.pemString).joined().write(toFile: path("gw.pem"), atomically: true, encoding: .utf8)
        try leaf.privateKey.write(toPEMFile: path("gw.key"))
        return leaf
    }

    /// Writes `tollgate.yaml`: `listener` (YAML lines of one `listen` entry, the address given),
    /// an admin listener, a cache and a JSON access log in `access.log`.
    func write(_ listener: String, more: String = "") throws -> String {
        let file = directory.appendingPathComponent("tollgate.yaml")
        try """
            listen:
              - address: "127.0.0.1:0"
            \(listener.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
            admin: { address: "127.0.0.1:0" }
            cache:
              path: "\(path("cache"))"
            log:
              access: "\(path("access.log"))"
              format: json
            \(more)
            """.write(to: file, atomically: true, encoding: .utf8)
        return file.path
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }
}

/// `curl -sS ARGUMENTS` with a time limit; no proxy from the environment, only a `--proxy` given.
private func curl(_ arguments: [String]) async throws -> (status: Int32, stdout: String, stderr: String) {
    let direct = arguments.contains("--proxy") ? [] : ["--noproxy", "*"]
    return try await ChildProcess.run("/usr/bin/curl", ["-sS", "--max-time", "20"] + direct + arguments)
}

/// The serial number of the certificate `openssl s_client` is shown on 127.0.0.1:`port` when it
/// sends `serverName` in SNI (none with nil), as `openssl x509 -serial` prints it; "" when the
/// handshake fails.
private func servedSerial(port: Int, serverName: String?) async throws -> String {
    let sni = serverName.map { "-servername \($0)" } ?? "-noservername"
    let result = try await ChildProcess.run(
        "/bin/sh",
        ["-c", "openssl s_client -connect 127.0.0.1:\(port) \(sni) </dev/null 2>/dev/null | openssl x509 -noout -serial"]
    )
    return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "serial=", with: "")
}

/// The ALPN protocol `openssl s_client -alpn h2,http/1.1` negotiates on 127.0.0.1:`port` ("" for none).
private func negotiatedALPN(port: Int) async throws -> String {
    let result = try await ChildProcess.run(
        "/bin/sh",
        ["-c", "openssl s_client -connect 127.0.0.1:\(port) -alpn h2,http/1.1 </dev/null 2>/dev/null | sed -n 's/^ALPN protocol: //p'"]
    )
    return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
}

@Suite(
    "TLS listeners (tollgate serve with curl and openssl)",
    .serialized,
    .timeLimit(.minutes(2)),
    .enabled(if: tollgateBinary != nil && FileManager.default.isExecutableFile(atPath: "/usr/bin/curl")
        && FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"))
)
struct TLSListenerTests {
    @Test("An HTTPS reverse listener serves curl --cacert, the second request from the cache; the log says TLSv1.3")
    func reverseOverTLS() async throws {
        let setup = try TLSListenerSetup()
        defer { setup.remove() }
        let origin = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, headers: ["Cache-Control": "max-age=300"], body: "origin \(request.target)")
        }
        defer { origin.stop() }
        let configuration = try setup.write("""
            mode: reverse
            upstream: "http://127.0.0.1:\(origin.port)"
            tls: { certificate: "srv.pem", key: "srv.key" }
            """)
        let served = try await Served.start(["--config", configuration], directory: setup.directory, lines: 2)
        defer { served.child.kill() }
        let url = "https://127.0.0.1:\(try served.port("reverse"))/doc"
        let first = try await curl(["-i", "--http1.1", "--cacert", setup.pki.caFile, url])
        #expect(first.status == 0, "curl: \(first.stderr)")
        #expect(first.stdout.hasPrefix("HTTP/1.1 200"), "\(first.stdout)")
        #expect(first.stdout.hasSuffix("origin /doc"))
        let second = try await curl(["-i", "--http1.1", "--cacert", setup.pki.caFile, url])
        #expect(second.stdout.contains("Cache-Status: tollgate; hit"), "\(second.stdout)")
        #expect(second.stdout.hasSuffix("origin /doc"))
        #expect(origin.requestCount == 1)
        #expect(origin.requests.first?.headerFields["X-Forwarded-Proto"] == "https")
        // Without the CA curl refuses the certificate: it is the listener's, not a default one.
        let untrusted = try await curl([url])
        #expect(untrusted.status == 60, "\(untrusted.stderr)")

        try await eventually("two access log lines") {
            ((try? String(contentsOfFile: setup.path("access.log"), encoding: .utf8)) ?? "").split(separator: "\n").count >= 2
        }
        let lines = try String(contentsOfFile: setup.path("access.log"), encoding: .utf8).split(separator: "\n")
        for line in lines.prefix(2) {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(object["client_tls"] as? String == "TLSv1.3", "\(line)")
        }
    }

    @Test("An HTTPS reverse listener negotiates h2 by ALPN: curl --http2 gets a miss then a hit, nghttp and h2load many streams on one connection")
    func reverseOverTLSWithHTTP2() async throws {
        let setup = try TLSListenerSetup()
        defer { setup.remove() }
        let origin = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, headers: ["Cache-Control": "max-age=300"], body: "origin \(request.target)")
        }
        defer { origin.stop() }
        let configuration = try setup.write("""
            mode: reverse
            upstream: "http://127.0.0.1:\(origin.port)"
            tls: { certificate: "srv.pem", key: "srv.key" }
            """)
        let served = try await Served.start(["--config", configuration], directory: setup.directory, lines: 2)
        defer { served.child.kill() }
        let port = try served.port("reverse")
        let url = "https://127.0.0.1:\(port)/h2"
        let first = try await curl(["-i", "-v", "--http2", "--cacert", setup.pki.caFile, url])
        #expect(first.status == 0, "curl: \(first.stderr)")
        #expect(first.stderr.contains("ALPN: server accepted h2"), "\(first.stderr)")
        #expect(first.stdout.hasPrefix("HTTP/2 200"), "\(first.stdout)")
        #expect(first.stdout.hasSuffix("origin /h2"))
        let second = try await curl(["-i", "--http2", "--cacert", setup.pki.caFile, url])
        #expect(second.stdout.hasPrefix("HTTP/2 200"), "\(second.stdout)")
        #expect(second.stdout.contains("cache-status: tollgate; hit"), "\(second.stdout)")
        // The same listener still answers a client that offers only http/1.1.
        #expect(try await negotiatedALPN(port: port) == "h2")
        let old = try await curl(["-i", "--http1.1", "--cacert", setup.pki.caFile, url])
        #expect(old.stdout.hasPrefix("HTTP/1.1 200"), "\(old.stdout)")
        #expect(origin.requestCount == 1)
        #expect(origin.requests.first?.headerFields["X-Forwarded-Proto"] == "https")

        try await eventually("three access log lines") {
            ((try? String(contentsOfFile: setup.path("access.log"), encoding: .utf8)) ?? "").split(separator: "\n").count >= 3
        }
        let lines = try String(contentsOfFile: setup.path("access.log"), encoding: .utf8).split(separator: "\n")
        let objects = try lines.prefix(3).map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        #expect(objects.map { $0["version"] as? String } == ["HTTP/2.0", "HTTP/2.0", "HTTP/1.1"], "\(lines)")
        #expect(objects.allSatisfy { $0["client_tls"] as? String == "TLSv1.3" })

        if FileManager.default.isExecutableFile(atPath: "/usr/bin/h2load") {
            // Bounded: 400 requests, 2 connections, 16 streams each at once, all from the cache.
            let load = try await ChildProcess.run("/usr/bin/h2load", ["-n", "400", "-c", "2", "-m", "16", url])
            #expect(load.status == 0, "h2load: \(load.stderr)")
            #expect(load.stdout.contains("Application protocol: h2"), "\(load.stdout)")
            #expect(load.stdout.contains("400 succeeded, 0 failed, 0 errored"), "\(load.stdout)")
            #expect(load.stdout.contains("status codes: 400 2xx"), "\(load.stdout)")
            #expect(origin.requestCount == 1)
        }
    }

    @Test("Inside an HTTPS proxy's TLS, a tunnel's half-close is TLS's close_notify: the client reads the origin's EOF and can still send")
    func tunnelHalfCloseInsideTLS() async throws {
        let setup = try TLSListenerSetup()
        defer { setup.remove() }
        let received = NIOLockedValueBoxBytes()
        let origin = try await GreetAndHalfClose.serve(received)
        defer { origin.close(promise: nil) }
        let originPort = try #require(origin.localAddress?.port)
        let configuration = try setup.write(
            "tls: { certificate: \"srv.pem\", key: \"srv.key\" }", more: "access:\n  connect-ports: [\(originPort)]"
        )
        let served = try await Served.start(["--config", configuration], directory: setup.directory, lines: 2)
        defer { served.child.kill() }
        // Python's ssl (OpenSSL underneath, not ours) as the client: the CONNECT, the greeting,
        // the EOF the origin's half-close became (close_notify), then bytes the other way.
        let script = """
            import socket, ssl, sys
            context = ssl.create_default_context(cafile=sys.argv[2])
            raw = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
            tls = context.wrap_socket(raw, server_hostname="127.0.0.1")
            tls.sendall(b"CONNECT 127.0.0.1:%s HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n" % sys.argv[3].encode())
            received = b""
            while True:
                chunk = tls.recv(4096)
                if not chunk:
                    break
                received += chunk
            print(repr(received))
            tls.sendall(b"still talking")
            print("sent")
            """
        let run = try await ChildProcess.run(
            "/usr/bin/python3",
            ["-c", script, String(try served.port("forward")), setup.pki.caFile, String(originPort)]
        )
        #expect(run.status == 0, "\(run.stdout) \(run.stderr)")
        #expect(run.stdout.contains("Connection Established\\r\\n\\r\\nhello, then EOF'"), "\(run.stdout)")
        #expect(run.stdout.hasSuffix("sent\n"))
        try await eventually("the origin reads what was sent after its EOF") { received.text == "still talking" }
    }

    @Test("An HTTPS forward proxy (curl --proxy https://) relays an absolute-form request and a CONNECT inside its TLS")
    func httpsProxy() async throws {
        let setup = try TLSListenerSetup()
        defer { setup.remove() }
        let plain = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, body: "plain \(request.target)")
        }
        defer { plain.stop() }
        let originPKI = try TestPKI(commonName: "Origin CA", host: "127.0.0.1")
        let secure = try await LoopbackOrigin.start(tls: originPKI.serverConfiguration) { request, respond in
            respond.send(status: 200, body: "secure \(request.target)")
        }
        defer { secure.stop() }
        let configuration = try setup.write(
            "tls: { certificate: \"srv.pem\", key: \"srv.key\" }",
            more: "access:\n  connect-ports: [\(secure.port)]"
        )
        let served = try await Served.start(["--config", configuration], directory: setup.directory, lines: 2)
        defer { served.child.kill() }
        let proxy = ["--proxy", "https://127.0.0.1:\(try served.port("forward"))", "--proxy-cacert", setup.pki.caFile]

        let forwarded = try await curl(proxy + ["http://127.0.0.1:\(plain.port)/a"])
        #expect(forwarded.status == 0, "curl: \(forwarded.stderr)")
        #expect(forwarded.stdout == "plain /a")
        #expect(plain.requests.first?.headerFields["Via"] == "1.1 tollgate")  // it went through the proxy
        let tunnelled = try await curl(proxy + ["--cacert", originPKI.caFile, "https://127.0.0.1:\(secure.port)/b"])
        #expect(tunnelled.status == 0, "curl: \(tunnelled.stderr)")
        #expect(tunnelled.stdout == "secure /b")
        #expect(secure.requests.first?.headerFields["Via"] == nil)  // a tunnel: the proxy did not see the request
        // An HTTPS proxy offers h2 first (its CONNECTs then go on streams, HTTP2TunnelTests);
        // curl 7.88 offers only http/1.1 to a proxy, and gets it.
        #expect(try await negotiatedALPN(port: try served.port("forward")) == "h2")
        try await eventually("the CONNECT in the access log") {
            ((try? String(contentsOfFile: setup.path("access.log"), encoding: .utf8)) ?? "").contains("\"CONNECT\"")
        }
        let lines = try String(contentsOfFile: setup.path("access.log"), encoding: .utf8).split(separator: "\n")
        let connect = try #require(lines.first { $0.contains("\"CONNECT\"") })
        #expect(connect.contains("\"client_tls\":\"TLSv1.3\""), "\(connect)")
    }

    @Test("Inside an HTTPS proxy an intercepted CONNECT gets the minted leaf, and its second request is a cache hit")
    func interceptionInsideTLS() async throws {
        let setup = try TLSListenerSetup()
        defer { setup.remove() }
        let binary = try #require(tollgateBinary)
        let caDirectory = setup.path("interception-ca")
        let created = try await ChildProcess.run(binary, ["ca", "init", "--dir", caDirectory])
        #expect(created.status == 0, "ca init: \(created.stderr)")
        let originPKI = try TestPKI(commonName: "Origin CA", host: "localhost")
        let origin = try await LoopbackOrigin.start(tls: originPKI.serverConfiguration) { request, respond in
            respond.send(status: 200, headers: ["Cache-Control": "max-age=300"], body: "intercepted \(request.target)")
        }
        defer { origin.stop() }
        let configuration = try setup.write(
            "tls: { certificate: srv.pem, key: srv.key }",
            more: """
                access:
                  connect-ports: [\(origin.port)]
                hosts:
                  - match: "localhost"
                    intercept: true
                    trust: { roots: ["\(originPKI.caFile)"] }
                interception:
                  ca-dir: "\(caDirectory)"
                """
        )
        let served = try await Served.start(["--config", configuration], directory: setup.directory, lines: 2)
        defer { served.child.kill() }
        let arguments = [
            "-i", "--proxy", "https://127.0.0.1:\(try served.port("forward"))", "--proxy-cacert", setup.pki.caFile,
            "--cacert", caDirectory + "/ca.pem", "https://localhost:\(origin.port)/doc",
        ]
        let first = try await curl(arguments)
        #expect(first.status == 0, "curl: \(first.stderr)")
        #expect(first.stdout.hasSuffix("intercepted /doc"), "\(first.stdout)")
        let second = try await curl(arguments)
        // curl offers h2 inside the tunnel, and the minted context takes it: HTTP/2 inside a
        // CONNECT inside the listener's TLS.
        #expect(second.stdout.contains("HTTP/2 200"), "\(second.stdout)")
        #expect(second.stdout.contains("cache-status: tollgate; hit"), "\(second.stdout)")
        #expect(origin.requestCount == 1)
    }

    @Test("SNI picks each certificate by its DNS names (a wildcard too); an unknown name or none gets the first")
    func serverNameIndication() async throws {
        let setup = try TLSListenerSetup()
        defer { setup.remove() }
        let configuration = try setup.write("""
            tls:
              certificates:
                - { certificate: srv.pem, key: srv.key }
                - { certificate: a.pem, key: a.key }
                - { certificate: b.pem, key: b.key }
            """)
        let served = try await Served.start(["--config", configuration], directory: setup.directory, lines: 2)
        defer { served.child.kill() }
        let port = try served.port("forward")
        let defaultSerial = setup.pki.server.certificate.serialNumber
        #expect(try await servedSerial(port: port, serverName: "a.test") == setup.named.certificate.serialNumber)
        #expect(try await servedSerial(port: port, serverName: "x.b.test") == setup.wildcard.certificate.serialNumber)
        #expect(try await servedSerial(port: port, serverName: "unknown.test") == defaultSerial)
        #expect(try await servedSerial(port: port, serverName: nil) == defaultSerial)
    }

    @Test("A client that connects again resumes its session by ticket and is served over it; with session-tickets: false each connection is a full handshake")
    func sessionResumption() async throws {
        let setup = try TLSListenerSetup()
        defer { setup.remove() }
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "over a resumed session\n") }
        defer { origin.stop() }
        for tickets in [true, false] {
            let configuration = try setup.write("""
                mode: reverse
                upstream: "http://127.0.0.1:\(origin.port)"
                tls: { certificate: srv.pem, key: srv.key\(tickets ? "" : ", session-tickets: false") }
                """)
            let served = try await Served.start(["--config", configuration], directory: setup.directory, lines: 2)
            defer { served.child.kill() }
            let session = setup.path("session-\(tickets).pem")
            var lines: [String] = []
            for (index, store) in ["-sess_out", "-sess_in"].enumerated() {
                let client = try await ChildProcess.run(
                    "/bin/sh",
                    [
                        "-c",
                        "printf 'GET /r\(index) HTTP/1.1\\r\\nHost: gw\\r\\nConnection: close\\r\\n\\r\\n' | openssl s_client -connect 127.0.0.1:\(try served.port("reverse")) "
                            + "-CAfile \(setup.pki.caFile) -verify_return_error -tls1_3 \(store) \(session) -ign_eof 2>/dev/null",
                    ]
                )
                lines.append(client.stdout.split(separator: "\n").first { $0.hasPrefix("New,") || $0.hasPrefix("Reused,") }.map(String.init) ?? "")
                if tickets { #expect(client.stdout.contains("over a resumed session"), "\(client.stdout)") }
            }
            #expect(lines[0].hasPrefix("New, TLSv1.3"), "\(lines)")
            if tickets {
                #expect(lines[1].hasPrefix("Reused, TLSv1.3"), "\(lines)")
            } else {
                #expect(!lines[1].hasPrefix("Reused"), "\(lines)")
            }
            served.child.kill()
        }
    }

    @Test("With session-ticket-keys a client resumes its session on the next instance (a restart), and after a rotation that puts a new key first; without, a restart is a full handshake")
    func sharedTicketKeys() async throws {
        let setup = try TLSListenerSetup()
        defer { setup.remove() }
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "resumed\n") }
        defer { origin.stop() }
        for name in ["old.key", "new.key"] {
            #expect(FileManager.default.createFile(atPath: setup.path(name), contents: Data((0..<80).map { _ in UInt8.random(in: 0...255) })))
            #expect(chmod(setup.path(name), 0o600) == 0)
        }
        /// "New, …" or "Reused, …" for one request through a listener started with `keys`, saving
        /// the session (`-sess_out`) or offering it (`-sess_in`).
        func handshake(keys: String?, _ store: String, _ session: String) async throws -> String {
            let configuration = try setup.write("""
                mode: reverse
                upstream: "http://127.0.0.1:\(origin.port)"
                tls: { certificate: srv.pem, key: srv.key\(keys.map { ", session-ticket-keys: \($0)" } ?? "") }
                """)
            let served = try await Served.start(["--config", configuration], directory: setup.directory, lines: 2)
            defer { served.child.kill() }
            let client = try await ChildProcess.run(
                "/bin/sh",
                [
                    "-c",
                    "printf 'GET / HTTP/1.1\\r\\nHost: gw\\r\\nConnection: close\\r\\n\\r\\n' | openssl s_client -connect 127.0.0.1:\(try served.port("reverse")) "
                        + "-CAfile \(setup.pki.caFile) -verify_return_error -tls1_3 \(store) \(session) -ign_eof 2>/dev/null",
                ]
            )
            #expect(client.stdout.contains("resumed"), "\(client.stdout)")
            return client.stdout.split(separator: "\n").first { $0.hasPrefix("New,") || $0.hasPrefix("Reused,") }.map(String.init) ?? ""
        }
        let shared = setup.path("shared.pem")
        #expect(try await handshake(keys: "old.key", "-sess_out", shared).hasPrefix("New,"))
        #expect(try await handshake(keys: "old.key", "-sess_in", shared).hasPrefix("Reused,"), "the next instance, given the same key")
        let rotated = try await handshake(keys: "[new.key, old.key]", "-sess_in", shared)
        #expect(rotated.hasPrefix("Reused,"), "a ticket under the old key, second now: \(rotated)")
        #expect(try await handshake(keys: "new.key", "-sess_in", shared).hasPrefix("New,"), "the old key gone: a full handshake")
        let own = setup.path("own.pem")
        #expect(try await handshake(keys: nil, "-sess_out", own).hasPrefix("New,"))
        #expect(try await handshake(keys: nil, "-sess_in", own).hasPrefix("New,"), "without keys each instance makes its own")
    }

    @Test("With min-version 1.3 a TLS 1.2 client is refused and a TLS 1.3 one served")
    func minimumVersion() async throws {
        let setup = try TLSListenerSetup()
        defer { setup.remove() }
        let configuration = try setup.write("tls: { certificate: srv.pem, key: srv.key, min-version: \"1.3\" }")
        let served = try await Served.start(["--config", configuration], directory: setup.directory, lines: 2)
        defer { served.child.kill() }
        let connect = ["s_client", "-connect", "127.0.0.1:\(try served.port("forward"))"]
        let old = try await ChildProcess.run("/bin/sh", ["-c", "openssl \(connect.joined(separator: " ")) -tls1_2 </dev/null"])
        #expect(old.status != 0, "\(old.stdout)")
        #expect(old.stdout.contains("Cipher is (NONE)"), "\(old.stdout)")  // no handshake completed
        let current = try await ChildProcess.run("/bin/sh", ["-c", "openssl \(connect.joined(separator: " ")) -tls1_3 </dev/null"])
        #expect(current.status == 0, "\(current.stderr)")
        #expect(current.stdout.contains("TLSv1.3"))
    }

    @Test("A reload puts a renewed certificate in force for new connections; an open one goes on; a broken key keeps the renewed one")
    func reloadSwapsCertificates() async throws {
        let setup = try TLSListenerSetup()
        defer { setup.remove() }
        let origin = try await LoopbackOrigin.start { request, respond in
            guard request.path == "/slow" else { return respond.send(status: 200, body: "after\n") }
            // Long enough for the test to renew the certificate and reload in between.
            DispatchQueue.global().asyncAfter(deadline: .now() + 3) { respond.send(status: 200, body: "slow\n") }
        }
        defer { origin.stop() }
        let configuration = try setup.write("""
            mode: reverse
            upstream: "http://127.0.0.1:\(origin.port)"
            tls: { certificate: "srv.pem", key: "srv.key" }
            """)
        let served = try await Served.start(["--config", configuration], directory: setup.directory, lines: 2)
        defer { served.child.kill() }
        let port = try served.port("reverse")
        let admin = "http://127.0.0.1:\(try served.port("admin"))/config/reload"
        #expect(try await servedSerial(port: port, serverName: nil) == setup.pki.server.certificate.serialNumber)

        // One curl, two requests on one connection: the first outlasts the reload.
        async let kept = curl([
            "--cacert", setup.pki.caFile, "-w", "%{num_connects}\n",
            "https://127.0.0.1:\(port)/slow", "https://127.0.0.1:\(port)/after",
        ])
        try await eventually("the slow request at the origin") { origin.requests.contains { $0.path == "/slow" } }
        let renewed = try setup.pki.authority.issueLeaf(for: "127.0.0.1")
        try setup.writeIdentity(renewed, "srv")
        let reload = try await curl(["-X", "POST", admin])
        #expect(reload.stdout == "reloaded\n", "\(reload.stdout)")
        #expect(try await servedSerial(port: port, serverName: nil) == renewed.certificate.serialNumber)

        let open = try await kept
        #expect(open.status == 0, "curl: \(open.stderr)")
        #expect(open.stdout == "slow\n1\nafter\n0\n")  // the second request made no new connection

        // A key file that is no key: the reload is refused, naming it, and the renewed certificate stays.
        try "no key here\n".write(toFile: setup.path("srv.key"), atomically: false, encoding: .utf8)
        let refused = try await curl(["-X", "POST", admin])
        #expect(refused.stdout.contains("\(configuration):"), "\(refused.stdout)")
        #expect(refused.stdout.contains("listen[0].tls.key: cannot load the key"), "\(refused.stdout)")
        #expect(try await servedSerial(port: port, serverName: nil) == renewed.certificate.serialNumber)
    }

    @Test("With ocsp-response the listener staples it and curl --cert-status accepts the certificate; a revoked response put in place and reloaded makes curl refuse it; /metrics says when it runs out; without one curl --cert-status fails")
    func ocspStapling() async throws {
        let setup = try TLSListenerSetup()
        defer { setup.remove() }
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "checked\n") }
        defer { origin.stop() }
        let intermediate = try setup.pki.authority.issueIntermediate(commonName: "Listener Intermediate")
        let leaf = try setup.writeGatewayIdentity(issuedBy: intermediate)
        let good = try await TestOCSPResponder.response(by: intermediate, for: leaf)
        #expect(FileManager.default.createFile(atPath: setup.path("gw.ocsp"), contents: Data(good)))
        let configuration = try setup.write("""
            mode: reverse
            upstream: "http://127.0.0.1:\(origin.port)"
            tls: { certificate: gw.pem, key: gw.key, ocsp-response: gw.ocsp }
            """)
        let served = try await Served.start(["--config", configuration], directory: setup.directory, lines: 2)
        defer { served.child.kill() }
        let url = "https://127.0.0.1:\(try served.port("reverse"))/"
        let admin = try served.port("admin")
        let checked = try await curl(["--cacert", setup.pki.caFile, "--cert-status", url])
        #expect(checked.status == 0 && checked.stdout == "checked\n", "\(checked.stderr)")
        let listing = try await request("GET /listeners HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: admin).bodyText
        #expect(listing.contains("\"ocsp\":{\"next_update\":"), "\(listing)")
        #expect(listing.contains("\"source\":\"file\",\"status\":\"good\"") && listing.contains("\"session_tickets\":\"own\""), "\(listing)")

        let metrics = try await request("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: admin).bodyText
        let nextUpdate = try #require(try OCSPResponse(der: good, for: leaf.certificateChain).nextUpdate)
        #expect(
            metrics.contains("tollgate_listener_ocsp_next_update_timestamp_seconds{listener=\"127.0.0.1:0\",certificate=\"\(setup.path("gw.pem"))\"} \(Int64(nextUpdate.timeIntervalSince1970))"),
            "\(metrics.split(separator: "\n").filter { $0.contains("ocsp") })"
        )

        // The CA revokes the certificate: the operator's cron fetches the new response and reloads.
        let revoked = try await TestOCSPResponder.response(by: intermediate, for: leaf, status: .revoked)
        #expect(FileManager.default.createFile(atPath: setup.path("gw.ocsp"), contents: Data(revoked)))
        let reload = try await curl(["-X", "POST", "http://127.0.0.1:\(admin)/config/reload"])
        #expect(reload.stdout == "reloaded\n", "\(reload.stdout)")
        let refused = try await curl(["--cacert", setup.pki.caFile, "--cert-status", url])
        #expect(refused.status == 91 && refused.stderr.contains("revocation reason"), "\(refused.stdout) \(refused.stderr)")
        let revokedListing = try await request("GET /listeners HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: admin).bodyText
        #expect(revokedListing.contains("\"source\":\"file\",\"status\":\"revoked\""), "\(revokedListing)")

        // A listener without a response: curl asking for one fails, as it does against any server that staples none.
        let plainConfiguration = try setup.write("""
            mode: reverse
            upstream: "http://127.0.0.1:\(origin.port)"
            tls: { certificate: srv.pem, key: srv.key }
            """)
        served.child.kill()
        let plain = try await Served.start(["--config", plainConfiguration], directory: setup.directory, lines: 2)
        defer { plain.child.kill() }
        let none = try await curl(["--cacert", setup.pki.caFile, "--cert-status", "https://127.0.0.1:\(try plain.port("reverse"))/"])
        #expect(none.status != 0, "\(none.stdout) \(none.stderr)")
        let fine = try await curl(["--cacert", setup.pki.caFile, "https://127.0.0.1:\(try plain.port("reverse"))/"])
        #expect(fine.status == 0, "\(fine.stderr)")
    }

    @Test("With ocsp-stapling the listener fetches its certificate's response from the responder the certificate names (a POST of the request, through its session) and staples it: curl --cert-status accepts it; once the CA revokes the certificate, a reload fetches the revoked answer and curl refuses it; a forged answer is not stapled")
    func ocspFetched() async throws {
        let fixture = try await StaplingFixture.make()
        defer { fixture.stop() }
        let (setup, responder, answer, intermediate, leaf, good, configuration) = (
            fixture.setup, fixture.responder, fixture.answer, fixture.intermediate, fixture.leaf, fixture.good, fixture.configuration
        )
        let served = try await Served.start(["--config", configuration], directory: setup.directory, lines: 2)
        defer { served.child.kill() }
        let url = "https://127.0.0.1:\(try served.port("reverse"))/"
        try await eventuallyAsync("the response fetched and stapled") {
            (try? await curl(["--cacert", setup.pki.caFile, "--cert-status", url]))?.status == 0
        }
        let metrics = try await request("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: try served.port("admin")).bodyText
        let nextUpdate = try #require(try OCSPResponse(der: good, for: leaf.certificateChain).nextUpdate)
        #expect(
            metrics.contains("tollgate_listener_ocsp_next_update_timestamp_seconds{listener=\"127.0.0.1:0\",certificate=\"\(setup.path("gw.pem"))\"} \(Int64(nextUpdate.timeIntervalSince1970))"),
            "the fetched response's nextUpdate: \(metrics.split(separator: "\n").filter { $0.contains("ocsp") })"
        )
        let fetched = try #require(responder.requests.first)
        let requestFile = setup.path("request.der")
        try Data(fetched.body).write(to: URL(fileURLWithPath: requestFile))
        let read = try await ChildProcess.run("/usr/bin/openssl", ["ocsp", "-reqin", requestFile, "-req_text"])
        #expect(read.stdout.contains("Serial Number: \(leaf.certificate.serialNumber)"), "\(read.stdout)")

        // The CA revokes the certificate; a reload fetches again.
        let revoked = try await TestOCSPResponder.response(by: intermediate, for: leaf, status: .revoked)
        answer.withLockedValue { $0 = revoked }
        let admin = "http://127.0.0.1:\(try served.port("admin"))/config/reload"
        #expect(try await curl(["-X", "POST", admin]).stdout == "reloaded\n")
        try await eventuallyAsync("the revoked answer stapled") {
            let refused = try? await curl(["--cacert", setup.pki.caFile, "--cert-status", url])
            return refused?.status == 91 && refused?.stderr.contains("revocation reason") == true
        }

        // A forged answer (another CA's signature) is refused: the last good one — here the
        // revoked one — stays stapled, and the log says why.
        let forged = try await TestOCSPResponder.response(by: intermediate, for: leaf, signedBy: try CertificateAuthority.create(commonName: "Forger"))
        answer.withLockedValue { $0 = forged }
        let before = responder.requestCount
        #expect(try await curl(["-X", "POST", admin]).stdout == "reloaded\n")
        // The listener's context is made again for the first connection after the reload.
        _ = try await curl(["--cacert", setup.pki.caFile, url])
        try await eventually("fetched again") { responder.requestCount > before }
        try await eventually("the refusal logged") { served.child.standardError.contains("cannot fetch the OCSP response") && served.child.standardError.contains("signature") }
        let still = try await curl(["--cacert", setup.pki.caFile, "--cert-status", url])
        #expect(still.status == 91, "\(still.stderr)")
    }

    @Test("A fetched OCSP response is kept in the data directory: after a restart with the responder failing, and offline, it is stapled from the first handshake")
    func ocspKeptAcrossRestarts() async throws {
        let fixture = try await StaplingFixture.make()
        defer { fixture.stop() }
        let (setup, responder, answer, configuration) = (fixture.setup, fixture.responder, fixture.answer, fixture.configuration)
        let data = ["XDG_DATA_HOME": setup.path("data")]
        do {
            let served = try await Served.start(["--config", configuration], directory: setup.directory, lines: 2, environment: data)
            defer { served.child.kill() }
            let url = "https://127.0.0.1:\(try served.port("reverse"))/"
            try await eventuallyAsync("the response fetched and stapled") {
                (try? await curl(["--cacert", setup.pki.caFile, "--cert-status", url]))?.status == 0
            }
            served.child.send(SIGTERM)
            _ = try await served.child.waitForExit(timeout: .seconds(20))
        }
        #expect(FileManager.default.fileExists(atPath: setup.path("data/tollgate/ocsp/data.mdb")))

        // The responder now fails: the restarted listener staples the kept response at once.
        answer.withLockedValue { $0 = [] }
        let before = responder.requestCount
        for arguments in [[], ["--offline"]] {
            let served = try await Served.start(["--config", configuration] + arguments, directory: setup.directory, lines: 2, environment: data)
            defer { served.child.kill() }
            let first = try await curl(["--cacert", setup.pki.caFile, "--cert-status", "https://127.0.0.1:\(try served.port("reverse"))/"])
            #expect(first.status == 0, "\(arguments): \(first.stderr)")
            // (Offline the page itself is a miss: what matters is the handshake.)
            if arguments.isEmpty { #expect(first.stdout == "checked\n") }
            try await eventually("the kept response's log line") {
                served.child.standardError.contains("stapling the OCSP response kept from an earlier run")
            }
        }
        // Online it still asked the responder (which failed); offline it asked nothing.
        try await eventually("the online run's fetch") { responder.requestCount == before + 1 }
    }

    @Test("Plain HTTP sent to a TLS listener closes that connection; the listener serves TLS clients after it")
    func garbageIsRefused() async throws {
        let setup = try TLSListenerSetup()
        defer { setup.remove() }
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "fine") }
        defer { origin.stop() }
        let configuration = try setup.write("tls: { certificate: srv.pem, key: srv.key }")
        let served = try await Served.start(["--config", configuration], directory: setup.directory, lines: 2)
        defer { served.child.kill() }
        let port = try served.port("forward")
        for garbage in ["GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\n\r\n", "\u{16}\u{03}\u{01}\u{00}\u{05}hello"] {
            let client = try await RawClient.connect(port: port)
            defer { client.close() }
            try await client.send(garbage)
            try await client.waitForClose()
        }
        let after = try await curl([
            "--proxy", "https://127.0.0.1:\(port)", "--proxy-cacert", setup.pki.caFile, "http://127.0.0.1:\(origin.port)/",
        ])
        #expect(after.stdout == "fine", "\(after.stderr)")
        #expect(served.child.isRunning)
    }

    @Test("/metrics counts failed client handshakes by reason: plain HTTP is failed, a client refusing the certificate alert, a connection closed at once closed")
    func handshakeFailuresAreCounted() async throws {
        let setup = try TLSListenerSetup()
        defer { setup.remove() }
        let configuration = try setup.write("tls: { certificate: srv.pem, key: srv.key }")
        let served = try await Served.start(["--config", configuration], directory: setup.directory, lines: 2)
        defer { served.child.kill() }
        let port = try served.port("forward")
        let admin = try served.port("admin")
        func failures() async throws -> [String: Int] {
            let metrics = try await request("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: admin).bodyText
            var counted: [String: Int] = [:]
            for line in metrics.split(separator: "\n") {
                guard let match = line.wholeMatch(of: #/tollgate_client_tls_handshake_failures_total\{reason="(\w+)"\} (\d+)/#)
                else { continue }
                counted[String(match.1)] = Int(match.2)
            }
            return counted
        }
        #expect(try await failures() == ["alert": 0, "failed": 0, "closed": 0, "certificate": 0])

        // Plain HTTP to the TLS port.
        let plain = try await RawClient.connect(port: port)
        try await plain.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        try await plain.waitForClose()
        plain.close()
        // curl without the CA: it does not trust the listener's certificate and says so (an alert).
        let refusing = try await curl(["--proxy", "https://127.0.0.1:\(port)", "http://127.0.0.1:1/"])
        #expect(refusing.status != 0)
        // A client that connects and leaves before any byte (a port check).
        let leaving = try await RawClient.connect(port: port)
        leaving.close()
        // A client that completes the handshake is no failure.
        let good = try await curl(["--proxy", "https://127.0.0.1:\(port)", "--proxy-cacert", setup.pki.caFile, "http://127.0.0.1:1/"])
        #expect(good.status == 0, "\(good.stderr)")  // the proxy's own 502 for port 1, over TLS

        // The server side of each connection ends a moment after the client's: wait for the counts.
        var counted: [String: Int] = [:]
        for _ in 0..<50 {
            counted = try await failures()
            if counted == ["alert": 1, "failed": 1, "closed": 1, "certificate": 0] { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(counted == ["alert": 1, "failed": 1, "closed": 1, "certificate": 0])
    }

    @Test("check-config names FILE:LINE: KEY for a key readable by others and for a key of another certificate")
    func checkConfig() async throws {
        let setup = try TLSListenerSetup()
        defer { setup.remove() }
        let binary = try #require(tollgateBinary)
        let configuration = try setup.write("tls: { certificate: srv.pem, key: a.key }")
        let mismatched = try await ChildProcess.run(binary, ["check-config", configuration])
        #expect(mismatched.status == 1)
        #expect(
            mismatched.stdout.contains(
                "\(configuration):3: listen[0].tls.key: the key \(setup.path("a.key")) does not belong to the certificate \(setup.path("srv.pem"))"
            ),
            "\(mismatched.stdout)"
        )
        _ = try setup.write("tls: { certificate: srv.pem, key: srv.key }")
        #expect(chmod(setup.path("srv.key"), 0o644) == 0)
        let open = try await ChildProcess.run(binary, ["check-config", configuration])
        #expect(open.status == 1)
        #expect(open.stdout.contains("\(configuration):3: listen[0].tls.key: "), "\(open.stdout)")
        #expect(open.stdout.contains("chmod 600 \(setup.path("srv.key"))"))
        #expect(chmod(setup.path("srv.key"), 0o600) == 0)
        let fine = try await ChildProcess.run(binary, ["check-config", configuration])
        #expect(fine.status == 0, "\(fine.stdout)")
    }
}

/// A reverse TLS listener with `ocsp-stapling` in front of an origin answering `checked`: its
/// leaf issued by an intermediate and naming a responder that answers an OCSP POST with
/// ``answer`` (503 while it is empty, 400 to anything else), a good response made, and the
/// configuration written.
private struct StaplingFixture {
    let setup: TLSListenerSetup
    let origin: LoopbackOrigin
    let responder: LoopbackOrigin
    let answer: NIOLockedValueBox<[UInt8]>
    let intermediate: CertificateAuthority
    let leaf: Identity
    let good: [UInt8]
    let configuration: String

    static func make() async throws -> StaplingFixture {
        let setup = try TLSListenerSetup()
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "checked\n") }
        let intermediate = try setup.pki.authority.issueIntermediate(commonName: "Listener Intermediate")
        // The responder's address is known once it listens; the certificate names it.
        let answer = NIOLockedValueBox<[UInt8]>([])
        let responder = try await LoopbackOrigin.start { request, respond in
            guard request.method == "POST", request.headerFields["Content-Type"] == "application/ocsp-request" else {
                return respond.send(status: 400, body: "")
            }
            let bytes = answer.withLockedValue { $0 }
            if bytes.isEmpty { return respond.send(status: 503, body: "responder down") }
            respond.send(status: 200, headers: ["Content-Type": "application/ocsp-response"], bytes: bytes)
        }
        do {
            let leaf = try setup.writeGatewayIdentity(issuedBy: intermediate, ocspResponder: "http://127.0.0.1:\(responder.port)/")
            let good = try await TestOCSPResponder.response(by: intermediate, for: leaf)
            answer.withLockedValue { $0 = good }
            let configuration = try setup.write(
                """
                mode: reverse
                upstream: "http://127.0.0.1:\(origin.port)"
                tls: { certificate: gw.pem, key: gw.key, ocsp-stapling: true }
                """,
                more: "access:\n  destinations:\n    - { allow: all }"
            )
            return StaplingFixture(
                setup: setup, origin: origin, responder: responder, answer: answer, intermediate: intermediate, leaf: leaf,
                good: good, configuration: configuration
            )
        } catch {
            responder.stop()
            origin.stop()
            setup.remove()
            throw error
        }
    }

    func stop() {
        responder.stop()
        origin.stop()
        setup.remove()
    }
}
