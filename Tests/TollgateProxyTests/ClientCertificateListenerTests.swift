import Foundation
import Testing
import TollgateHTTP
import TollgateTLS
import TollgateTesting

/// A directory with the listener's certificate for 127.0.0.1 (`srv.pem`, `srv.key`, from the
/// server CA in `server-ca.pem`), a client CA (`clients-ca.pem`) with an intermediate, and two
/// client identities curl presents: `agent` (issued by the intermediate; its file holds the leaf
/// and the intermediate) and `stranger` (from a CA the listener does not know).
private struct ClientAuthSetup {
    let directory: URL
    let server: TestPKI
    let clientRoot: CertificateAuthority
    let clientIntermediate: CertificateAuthority
    let agent: Identity
    let stranger: Identity

    init() throws {
        directory = try temporaryDirectory()
        server = try TestPKI(commonName: "Gateway Server CA", host: "127.0.0.1")
        clientRoot = try CertificateAuthority.create(commonName: "Build Agents Root")
        clientIntermediate = try clientRoot.issueIntermediate(commonName: "Build Agents Issuing CA")
        agent = try clientIntermediate.issueLeaf(for: "agent-7.example", usage: .clientAuth)
        stranger = try CertificateAuthority.create(commonName: "Stranger CA").issueLeaf(for: "stranger.example", usage: .clientAuth)
        try server.server.certificate.pemString.write(toFile: path("srv.pem"), atomically: true, encoding: .utf8)
        try server.server.privateKey.write(toPEMFile: path("srv.key"))
        try clientRoot.certificate.pemString.write(toFile: path("clients-ca.pem"), atomically: true, encoding: .utf8)
        try write(agent, "agent")
        try write(stranger, "stranger")
    }

    /// `NAME.pem` (the chain, leaf first) and `NAME.key`.
    func write(_ identity: Identity, _ name: String) throws {
        try identity.certificateChain.map(\.pemString).joined().write(toFile: path("\(name).pem"), atomically: true, encoding: .utf8)
        try identity.privateKey.write(toPEMFile: path("\(name).key"), overwrite: true)
    }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// `tollgate.yaml` with one listener (`listener`: its YAML lines after the address), an admin
    /// listener, a cache and a JSON access log in `access.log`.
    func configuration(_ listener: String) throws -> String {
        let file = path("tollgate.yaml")
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
            """.write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }

    /// `tollgate.yaml` with a reverse TLS listener in front of `upstreamPort` whose `client-auth`
    /// is `clientAuth` (its YAML flow mapping).
    func reverseConfiguration(upstreamPort: Int, clientAuth: String) throws -> String {
        try configuration("""
            mode: reverse
            upstream: "http://127.0.0.1:\(upstreamPort)"
            tls:
              certificate: srv.pem
              key: srv.key
              client-auth: \(clientAuth)
            """)
    }

    /// `tollgate serve` on ``reverseConfiguration(upstreamPort:clientAuth:)``.
    func serveReverse(upstreamPort: Int, clientAuth: String) async throws -> Served {
        let file = try reverseConfiguration(upstreamPort: upstreamPort, clientAuth: clientAuth)
        return try await Served.start(["--config", file], directory: directory, lines: 2)
    }

    /// The access log's entries, once there are `count`.
    func logEntries(_ count: Int) async throws -> [[String: Any]] {
        try await eventually("\(count) access log lines") {
            ((try? String(contentsOfFile: path("access.log"), encoding: .utf8)) ?? "").split(separator: "\n").count >= count
        }
        return try String(contentsOfFile: path("access.log"), encoding: .utf8).split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }

    /// `curl -sS` to the listener with the server CA trusted; `identity` presents NAME.pem/NAME.key.
    func curl(_ url: String, identity: String?, _ more: [String] = []) async throws -> (status: Int32, stdout: String, stderr: String) {
        let certificate = identity.map { ["--cert", path("\($0).pem"), "--key", path("\($0).key")] } ?? []
        return try await ChildProcess.run(
            "/usr/bin/curl",
            ["-sS", "--max-time", "20", "--noproxy", "*", "--cacert", server.caFile] + certificate + more + [url]
        )
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }
}

/// RFC 9440's byte sequence of a certificate: its DER in base64 between colons.
private func byteSequence(_ certificate: Certificate) -> String {
    ":" + Data(certificate.derBytes).base64EncodedString() + ":"
}

@Suite(
    "A TLS listener's client-auth: client certificates checked in the handshake, passed to the origin (RFC 9440), logged",
    .timeLimit(.minutes(2)),
    .enabled(if: tollgateBinary != nil && FileManager.default.isExecutableFile(atPath: "/usr/bin/curl"))
)
struct ClientCertificateListenerTests {
    @Test("verify required: curl without a certificate, or with one from another CA, is turned away; an agent's is passed on as Client-Cert and Client-Cert-Chain over HTTP/1.1 and h2")
    func required() async throws {
        let setup = try ClientAuthSetup()
        defer { setup.remove() }
        let origin = try await LoopbackOrigin.start { request, respond in
            let cacheControl = request.target.hasPrefix("/public") ? "public, max-age=300" : "max-age=300"
            respond.send(status: 200, headers: ["Cache-Control": cacheControl], body: "origin \(request.target)")
        }
        defer { origin.stop() }
        let served = try await setup.serveReverse(upstreamPort: origin.port, clientAuth: "{ roots: clients-ca.pem }")
        defer { served.child.kill() }
        let base = "https://127.0.0.1:\(try served.port("reverse"))"

        let anonymous = try await setup.curl(base + "/doc", identity: nil, ["--http1.1"])
        #expect(anonymous.status != 0, "no certificate, no answer: \(anonymous.stdout)")
        let stranger = try await setup.curl(base + "/doc", identity: "stranger", ["--http1.1"])
        #expect(stranger.status != 0, "a certificate from another CA: \(stranger.stdout)")
        #expect(origin.requestCount == 0)

        // The client's own Client-Cert claim is replaced by the certificate it proved.
        let agent = try await setup.curl(base + "/doc", identity: "agent", ["--http1.1", "-H", "Client-Cert: :AAAA:"])
        #expect(agent.status == 0, "\(agent.stderr)")
        #expect(agent.stdout == "origin /doc")
        let forwarded = try #require(origin.requests.first)
        #expect(forwarded.headerFields.values(for: HeaderName("Client-Cert")) == [byteSequence(setup.agent.certificate)])
        #expect(forwarded.headerFields["Client-Cert-Chain"] == byteSequence(setup.clientIntermediate.certificate))

        // Not public: a response to a request that names its client is not stored (RFC 9111 §3.5).
        _ = try await setup.curl(base + "/doc", identity: "agent", ["--http1.1"])
        #expect(origin.requestCount == 2)
        // Public: stored, and the second is a hit; over h2 too.
        let h2 = try await setup.curl(base + "/public", identity: "agent", ["--http2", "-i"])
        #expect(h2.stdout.hasPrefix("HTTP/2 200"), "\(h2.stdout) \(h2.stderr)")
        let hit = try await setup.curl(base + "/public", identity: "agent", ["--http2", "-i"])
        #expect(hit.stdout.contains("cache-status: tollgate; hit"), "\(hit.stdout)")
        #expect(origin.requestCount == 3)
        #expect(origin.requests.last?.headerFields["Client-Cert"] == byteSequence(setup.agent.certificate))

        let entries = try await setup.logEntries(4)
        #expect(entries.allSatisfy { $0["client_cert"] as? String == "CN=agent-7.example" }, "\(entries)")
        #expect(entries[1]["not_stored_reason"] as? String == "authorization", "\(entries[1])")

        // Both refusals are counted as the client's certificate.
        let metrics = try await request("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: try served.port("admin")).bodyText
        #expect(metrics.contains("tollgate_client_tls_handshake_failures_total{reason=\"certificate\"} 2"), "\(metrics)")
        // The listener's own certificate: when it runs out.
        let listenerExpiry = "tollgate_listener_certificate_expiry_timestamp_seconds{listener=\"127.0.0.1:0\",subject=\"CN=127.0.0.1\",file=\"\(setup.path("srv.pem"))\"} "
        let expiryLine = try #require(metrics.split(separator: "\n").first { $0.hasPrefix(listenerExpiry) }, "\(metrics)")
        #expect(Double(expiryLine.dropFirst(listenerExpiry.count)) == setup.server.server.certificate.notAfter.timeIntervalSince1970)
    }

    @Test("verify optional: a client without a certificate is served without an identity, and its own Client-Cert is removed; forward: off passes none on")
    func optional() async throws {
        let setup = try ClientAuthSetup()
        defer { setup.remove() }
        let origin = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, headers: ["Cache-Control": "no-store"], body: "origin \(request.target)")
        }
        defer { origin.stop() }
        let served = try await setup.serveReverse(upstreamPort: origin.port, clientAuth: "{ roots: [clients-ca.pem], verify: optional }")
        defer { served.child.kill() }
        let base = "https://127.0.0.1:\(try served.port("reverse"))"
        let anonymous = try await setup.curl(base + "/a", identity: nil, ["-H", "Client-Cert: :AAAA:", "-H", "Client-Cert-Chain: :AAAA:"])
        #expect(anonymous.stdout == "origin /a", "\(anonymous.stderr)")
        #expect(origin.requests.last?.headerFields["Client-Cert"] == nil)
        #expect(origin.requests.last?.headerFields["Client-Cert-Chain"] == nil)
        let agent = try await setup.curl(base + "/b", identity: "agent")
        #expect(agent.stdout == "origin /b")
        #expect(origin.requests.last?.headerFields["Client-Cert"] == byteSequence(setup.agent.certificate))
        // A certificate that fails the check fails the handshake even when certificates are optional.
        let stranger = try await setup.curl(base + "/c", identity: "stranger")
        #expect(stranger.status != 0)
        #expect(origin.requestCount == 2)
        let entries = try await setup.logEntries(2)
        #expect(entries[0]["client_cert"] is NSNull)
        #expect(entries[1]["client_cert"] as? String == "CN=agent-7.example")

        served.child.kill()
        _ = try await served.child.waitForExit()
        let again = try await setup.serveReverse(upstreamPort: origin.port, clientAuth: "{ roots: clients-ca.pem, forward: \"off\" }")
        defer { again.child.kill() }
        let admitted = try await setup.curl("https://127.0.0.1:\(try again.port("reverse"))/d", identity: "agent")
        #expect(admitted.stdout == "origin /d", "\(admitted.stderr)")
        #expect(origin.requests.last?.headerFields["Client-Cert"] == nil)
    }

    @Test("crls: an agent whose certificate the issuing CA revoked is turned away; a reload puts a new list in force for new connections")
    func revoked() async throws {
        let setup = try ClientAuthSetup()
        defer { setup.remove() }
        let origin = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, headers: ["Cache-Control": "no-store"], body: "origin \(request.target)")
        }
        defer { origin.stop() }
        let issuing = try TestCRL(authority: setup.clientIntermediate)
        let rootList = try await TestCRL(authority: setup.clientRoot).writeCRL()
        try FileManager.default.copyItem(atPath: try await issuing.writeCRL(), toPath: setup.path("agents.crl"))
        let served = try await setup.serveReverse(upstreamPort: origin.port, clientAuth: "{ roots: clients-ca.pem, crls: [agents.crl, \"\(rootList)\"] }")
        defer { served.child.kill() }
        let url = "https://127.0.0.1:\(try served.port("reverse"))/x"
        #expect(try await setup.curl(url, identity: "agent").stdout == "origin /x")

        // /metrics says when each list needs replacing (a day from now, as the CA issued them).
        let metrics = try await request("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: try served.port("admin")).bodyText
        let series = "tollgate_crl_next_update_timestamp_seconds{file=\"\(setup.path("agents.crl"))\",issuer=\"CN=Build Agents Issuing CA\"} "
        let line = try #require(metrics.split(separator: "\n").first { $0.hasPrefix(series) }, "\(metrics)")
        let nextUpdate = try #require(Double(line.dropFirst(series.count)))
        #expect(abs(nextUpdate - Date().timeIntervalSince1970 - 86_400) < 300)
        #expect(metrics.contains("tollgate_crl_next_update_timestamp_seconds{file=\"\(rootList)\",issuer=\"CN=Build Agents Root\"} "))

        try await issuing.revoke(setup.agent.certificate)
        try FileManager.default.removeItem(atPath: setup.path("agents.crl"))
        try FileManager.default.copyItem(atPath: try await issuing.writeCRL(), toPath: setup.path("agents.crl"))
        let reload = try await request("POST /config/reload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n", port: try served.port("admin"))
        #expect(reload.status == 200, "\(reload.bodyText)")
        let refused = try await setup.curl(url, identity: "agent")
        #expect(refused.status != 0, "a revoked agent: \(refused.stdout)")
        #expect(origin.requestCount == 1)

        // A list taken out of the configuration leaves /metrics with the reload, rather than
        // keeping its last value for ever (and an alert on it firing).
        _ = try setup.reverseConfiguration(upstreamPort: origin.port, clientAuth: "{ roots: clients-ca.pem, crls: [agents.crl] }")
        let again = try await request("POST /config/reload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n", port: try served.port("admin"))
        #expect(again.status == 200, "\(again.bodyText)")
        let after = try await request("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: try served.port("admin")).bodyText
        #expect(!after.contains("file=\"\(rootList)\""), "\(after)")
        #expect(after.contains(series), "\(after)")
    }

    @Test("pins: only a client whose chain holds a pinned key is admitted — the agent's own key, or its issuing CA's for every agent under it")
    func pins() async throws {
        let setup = try ClientAuthSetup()
        defer { setup.remove() }
        let other = try setup.clientIntermediate.issueLeaf(for: "agent-8.example", usage: .clientAuth)
        try setup.write(other, "other")
        let origin = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, headers: ["Cache-Control": "no-store"], body: "origin \(request.target)")
        }
        defer { origin.stop() }
        func serve(pin: String) async throws -> Served {
            try await setup.serveReverse(upstreamPort: origin.port, clientAuth: "{ roots: clients-ca.pem, pins: [\"\(pin)\"] }")
        }
        let agentOnly = try await serve(pin: setup.agent.certificate.spkiPin.description)
        let url = "https://127.0.0.1:\(try agentOnly.port("reverse"))/p"
        #expect(try await setup.curl(url, identity: "agent").stdout == "origin /p")
        let refused = try await setup.curl(url, identity: "other")
        #expect(refused.status != 0, "same CA, another key: \(refused.stdout)")
        // Refused in the handshake: the client is told by an alert, not by a closed connection.
        #expect(refused.stderr.contains("bad certificate"), "\(refused.stderr)")
        #expect(origin.requestCount == 1)
        let metrics = try await request("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: try agentOnly.port("admin")).bodyText
        #expect(metrics.contains("tollgate_client_tls_handshake_failures_total{reason=\"certificate\"} 1"), "\(metrics)")
        try await eventually("the refusal is logged") { agentOnly.child.standardError.contains("no certificate of its chain has a client-auth pin") }
        #expect(agentOnly.child.standardError.contains("CN=agent-8.example"))
        agentOnly.child.kill()
        _ = try await agentOnly.child.waitForExit()

        let issuing = try await serve(pin: setup.clientIntermediate.certificate.spkiPin.description)
        defer { issuing.child.kill() }
        let issuingURL = "https://127.0.0.1:\(try issuing.port("reverse"))/q"
        #expect(try await setup.curl(issuingURL, identity: "agent").stdout == "origin /q")
        #expect(try await setup.curl(issuingURL, identity: "other").stdout == "origin /q")
        #expect(try await setup.curl(issuingURL, identity: "stranger").status != 0)
    }

    @Test("An HTTPS proxy with client-auth: inside an intercepted CONNECT the requests still name the client, in the log and (forward: client-cert) to the origin")
    func insideInterception() async throws {
        let setup = try ClientAuthSetup()
        defer { setup.remove() }
        let binary = try #require(tollgateBinary)
        let caDirectory = setup.path("interception-ca")
        let created = try await ChildProcess.run(binary, ["ca", "init", "--dir", caDirectory])
        #expect(created.status == 0, "\(created.stderr)")
        let originPKI = try TestPKI(commonName: "Origin CA", host: "origin.test")
        let origin = try await LoopbackOrigin.start(tls: originPKI.serverConfiguration) { request, respond in
            respond.send(status: 200, headers: ["Cache-Control": "no-store"], body: "origin \(request.target)")
        }
        defer { origin.stop() }
        let configuration = try setup.configuration("""
            tls:
              certificate: srv.pem
              key: srv.key
              client-auth: { roots: clients-ca.pem, forward: client-cert }
            """)
        var text = try String(contentsOfFile: configuration, encoding: .utf8)
        text += """

            access:
              connect-ports: [\(origin.port)]
            hosts:
              - match: origin.test
                intercept: true
                connect-to: "127.0.0.1:\(origin.port)"
                trust: { roots: "\(originPKI.caFile)" }
            interception:
              ca-dir: "\(caDirectory)"
            """
        try text.write(toFile: configuration, atomically: true, encoding: .utf8)
        let served = try await Served.start(["--config", configuration], directory: setup.directory, lines: 2)
        defer { served.child.kill() }
        let result = try await ChildProcess.run(
            "/usr/bin/curl",
            [
                "-sS", "--max-time", "20", "--proxy", "https://127.0.0.1:\(try served.port("forward"))",
                "--proxy-cacert", setup.server.caFile, "--proxy-cert", setup.path("agent.pem"), "--proxy-key", setup.path("agent.key"),
                "--cacert", caDirectory + "/ca.pem", "https://origin.test:\(origin.port)/inner",
            ]
        )
        #expect(result.stdout == "origin /inner", "\(result.stdout) \(result.stderr)")
        #expect(origin.requests.last?.headerFields["Client-Cert"] == byteSequence(setup.agent.certificate))
        let entries = try await setup.logEntries(2)
        let inner = try #require(entries.first { ($0["target"] as? String)?.contains("/inner") == true }, "\(entries)")
        #expect(inner["client_cert"] as? String == "CN=agent-7.example", "\(inner)")
    }

    @Test("check-config: client-auth needs roots of its own (not system), and names a damaged bundle or list at its line")
    func checkConfig() async throws {
        let setup = try ClientAuthSetup()
        defer { setup.remove() }
        let binary = try #require(tollgateBinary)
        func check(_ clientAuth: String) async throws -> (status: Int32, stdout: String) {
            let file = try setup.reverseConfiguration(upstreamPort: 9, clientAuth: clientAuth)
            let result = try await ChildProcess.run(binary, ["check-config", file])
            return (result.status, result.stdout)
        }
        let system = try await check("{ roots: system }")
        #expect(system.status == 1)
        #expect(system.stdout.contains("listen[0].tls.client-auth.roots: the system roots are public CAs"), "\(system.stdout)")
        let missing = try await check("{ verify: optional }")
        #expect(missing.stdout.contains("listen[0].tls.client-auth: missing key \"roots\""), "\(missing.stdout)")
        try "not a certificate".write(toFile: setup.path("bad.pem"), atomically: true, encoding: .utf8)
        let damaged = try await check("{ roots: bad.pem }")
        #expect(damaged.stdout.contains(":8: listen[0].tls.client-auth.roots: cannot read the client CA bundle"), "\(damaged.stdout)")
        let badList = try await check("{ roots: clients-ca.pem, crls: bad.pem }")
        #expect(badList.stdout.contains("listen[0].tls.client-auth.crls: cannot read the CRLs in"), "\(badList.stdout)")
        let verify = try await check("{ roots: clients-ca.pem, verify: sometimes }")
        #expect(verify.status == 1, "\(verify.stdout)")
        let badPin = try await check("{ roots: clients-ca.pem, pins: [\"sha256/short\"] }")
        #expect(badPin.stdout.contains("listen[0].tls.client-auth.pins[0]: "), "\(badPin.stdout)")
        let fine = try await check("{ roots: clients-ca.pem, verify: required, forward: client-cert }")
        #expect(fine.status == 0, "\(fine.stdout)")
    }
}
