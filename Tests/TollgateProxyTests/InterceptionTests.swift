import Foundation
import Testing
import TollgateHTTP
import TollgateTLS
import TollgateTesting

/// A CA directory made by `tollgate ca init`, a TLS origin for `localhost` signed by a test CA,
/// and a configuration intercepting `localhost` with the cache on.
private struct InterceptionSetup {
    let directory: URL
    let caDirectory: String
    let pki: TestPKI
    let origin: LoopbackOrigin

    var interceptionCA: String { caDirectory + "/ca.pem" }

    static func make(body: String = "intercepted body") async throws -> InterceptionSetup {
        let directory = try temporaryDirectory()
        let caDirectory = directory.appendingPathComponent("ca").path
        let binary = try #require(tollgateBinary)
        let created = try await ChildProcess.run(binary, ["ca", "init", "--dir", caDirectory])
        #expect(created.status == 0, "ca init: \(created.stderr)")
        let pki = try TestPKI(commonName: "Origin CA", host: "localhost")
        let origin = try await LoopbackOrigin.start(tls: pki.serverConfiguration) { request, respond in
            if request.path == "/big" {
                // Past the inline limit: stored in a body file (a hit of it cannot use sendfile through TLS).
                respond.send(status: 200, headers: ["Cache-Control": "max-age=300"], body: String(repeating: "b", count: 300_000))
                return
            }
            respond.send(status: 200, headers: ["Cache-Control": "max-age=300"], body: "\(body) \(request.target)")
        }
        return InterceptionSetup(directory: directory, caDirectory: caDirectory, pki: pki, origin: origin)
    }

    /// A configuration with one forward listener; `localhost` intercepted, trusted under `roots`.
    func configuration(roots: String? = nil, extraPorts: [Int] = [], logLevel: String = "info", admin: Bool = false) throws -> String {
        let file = directory.appendingPathComponent("tollgate.yaml")
        try """
        listen:
          - address: "127.0.0.1:0"
        \(admin ? "admin: { address: \"127.0.0.1:0\" }" : "")
        access:
          connect-ports: [\(([origin.port] + extraPorts).map(String.init).joined(separator: ", "))]
        cache:
          path: "\(directory.appendingPathComponent("cache").path)"
        hosts:
          - match: "localhost"
            intercept: true
            trust:
              roots: [\(roots ?? "\"\(pki.caFile)\"")]
        interception:
          ca-dir: "\(caDirectory)"
        log:
          level: \(logLevel)
        """.write(to: file, atomically: true, encoding: .utf8)
        return file.path
    }

    func stop() {
        origin.stop()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// `curl -sS -i -v --cacert CA -x PROXY URL`: exit status, output (both responses: the CONNECT's
/// and the request's) and curl's trace (where the certificate it saw is described). `version`:
/// what curl offers inside the tunnel's TLS (the minted context offers h2 and http/1.1; these
/// tests read HTTP/1.1 answers unless they ask for `--http2`).
private func curl(
    _ urls: String...,
    proxyPort: Int,
    cacert: String,
    version: String = "--http1.1",
    from source: String = "127.0.0.1"
) async throws -> (status: Int32, stdout: String, stderr: String) {
    try await ChildProcess.run(
        "/usr/bin/curl",
        ["-sS", "-i", "-v", version, "--max-time", "20", "--cacert", cacert, "--interface", source, "-x", "http://127.0.0.1:\(proxyPort)"]
            + urls
    )
}

@Suite(
    "TLS interception (tollgate serve with curl)",
    .serialized,
    .timeLimit(.minutes(1)),
    .enabled(if: tollgateBinary != nil && FileManager.default.isExecutableFile(atPath: "/usr/bin/curl"))
)
struct InterceptionTests {
    @Test("Offline, an intercepted host is served from the cache through the minted certificate; another CONNECT is 504")
    func interceptedOffline() async throws {
        let setup = try await InterceptionSetup.make()
        defer { setup.stop() }
        let configuration = try setup.configuration()
        let url = "https://localhost:\(setup.origin.port)/doc"
        do {
            let online = try await Served.start(["--config", configuration], directory: setup.directory, lines: 1)
            defer { online.child.kill() }
            let warmed = try await curl(url, proxyPort: try online.port("forward"), cacert: setup.interceptionCA)
            #expect(warmed.stdout.contains("Cache-Status: tollgate; fwd=uri-miss; stored"), "\(warmed.stdout)")
            online.child.send(SIGTERM)
            _ = try await online.child.waitForExit()
        }
        setup.origin.stop()
        let offline = try await Served.start(["--config", configuration, "--offline"], directory: setup.directory, lines: 1)
        defer { offline.child.kill() }
        let served = try await curl(url, proxyPort: try offline.port("forward"), cacert: setup.interceptionCA)
        #expect(served.status == 0, "curl: \(served.stderr)")
        #expect(served.stdout.contains("intercepted body /doc"), "\(served.stdout)")
        #expect(served.stdout.contains("Cache-Status: tollgate; hit; detail=\"offline\""), "\(served.stdout)")
        let missed = try await curl("https://localhost:\(setup.origin.port)/other", proxyPort: try offline.port("forward"), cacert: setup.interceptionCA)
        #expect(missed.stdout.contains("HTTP/1.1 504"), "\(missed.stdout)")
        #expect(missed.stdout.contains("Tollgate-Error: offline-miss"))
        #expect(setup.origin.requestCount == 1)
    }

    @Test("An intercepted CONNECT whose client offers h2 is served over HTTP/2 inside the minted TLS, the second time from the cache")
    func interceptsOverHTTP2() async throws {
        let setup = try await InterceptionSetup.make()
        defer { setup.stop() }
        let served = try await Served.start(["--config", try setup.configuration()], directory: setup.directory, lines: 1)
        defer { served.child.kill() }
        let proxy = try served.port("forward")
        let url = "https://localhost:\(setup.origin.port)/h2doc"
        let first = try await curl(url, proxyPort: proxy, cacert: setup.interceptionCA, version: "--http2")
        #expect(first.status == 0, "curl: \(first.stderr)")
        #expect(first.stderr.contains("ALPN: server accepted h2"), "\(first.stderr)")
        #expect(first.stdout.hasPrefix("HTTP/1.1 200 Connection Established\r\n\r\nHTTP/2 200"), "\(first.stdout)")
        #expect(first.stdout.hasSuffix("intercepted body /h2doc"), "\(first.stdout)")
        let second = try await curl(url, proxyPort: proxy, cacert: setup.interceptionCA, version: "--http2")
        #expect(second.stdout.contains("HTTP/2 200"), "\(second.stdout)")
        #expect(second.stdout.lowercased().contains("cache-status: tollgate; hit"), "\(second.stdout)")
        #expect(second.stdout.hasSuffix("intercepted body /h2doc"))
        #expect(setup.origin.requestCount == 1)
        // The stream's exchange is logged as the URL it went to, received over HTTP/2.
        try await eventually("the streams' access log lines") {
            served.child.standardError.components(separatedBy: "\"GET \(url) HTTP/2.0\" 200").count == 3
        }
    }

    @Test("An intercepted CONNECT is answered with a minted leaf; the second request is a cache hit; other hosts are tunnelled untouched")
    func interceptsAndCaches() async throws {
        let setup = try await InterceptionSetup.make()
        defer { setup.stop() }
        // A second TLS origin on 127.0.0.1, for which no rule intercepts.
        let plainPKI = try TestPKI(commonName: "Tunnelled Origin CA")
        let tunnelled = try await LoopbackOrigin.start(tls: plainPKI.serverConfiguration) { _, respond in
            respond.send(status: 200, headers: ["Cache-Control": "max-age=300"], body: "tunnelled body")
        }
        defer { tunnelled.stop() }
        let served = try await Served.start(
            ["--config", try setup.configuration(extraPorts: [tunnelled.port], admin: true)],
            directory: setup.directory,
            lines: 2
        )
        defer { served.child.kill() }
        let proxy = try served.port("forward")
        let url = "https://localhost:\(setup.origin.port)/doc"

        let first = try await curl(url, proxyPort: proxy, cacert: setup.interceptionCA)
        #expect(first.status == 0, "curl: \(first.stderr)")
        #expect(first.stdout.hasPrefix("HTTP/1.1 200 Connection Established\r\n\r\nHTTP/1.1 200"), "\(first.stdout)")
        #expect(first.stdout.contains("intercepted body /doc"))
        #expect(first.stdout.contains("Cache-Status: tollgate; fwd=uri-miss; stored"))
        // The certificate curl verified was minted by the interception CA, for localhost.
        #expect(first.stderr.contains("issuer: CN=Tollgate Local CA"), "\(first.stderr)")
        #expect(first.stderr.contains("subject: CN=localhost"))

        let second = try await curl(url, proxyPort: proxy, cacert: setup.interceptionCA)
        #expect(second.status == 0, "curl: \(second.stderr)")
        #expect(second.stdout.contains("intercepted body /doc"))
        #expect(second.stdout.contains("Cache-Status: tollgate; hit"), "\(second.stdout)")
        #expect(setup.origin.requestCount == 1)

        // Keep-alive inside the client's TLS: two requests, one CONNECT.
        let both = try await curl("\(url)?a", "\(url)?b", proxyPort: proxy, cacert: setup.interceptionCA)
        #expect(both.status == 0, "curl: \(both.stderr)")
        #expect(both.stdout.contains("intercepted body /doc?a") && both.stdout.contains("intercepted body /doc?b"), "\(both.stdout)")
        #expect(both.stderr.contains("Re-using existing connection"), "\(both.stderr)")
        try await eventually("the access log lines") {
            served.child.standardError.components(separatedBy: "\"CONNECT localhost:").count >= 4
        }

        // A large stored body is served through the client's TLS too (read from its file).
        for _ in 0..<2 {
            let big = try await ChildProcess.run(
                "/usr/bin/curl",
                ["-sS", "--max-time", "20", "--cacert", setup.interceptionCA, "-x", "http://127.0.0.1:\(proxy)",
                 "-o", "/dev/null", "-w", "%{http_code} %{size_download}", "https://localhost:\(setup.origin.port)/big"]
            )
            #expect(big.status == 0, "curl: \(big.stderr)")
            #expect(big.stdout == "200 300000")
        }
        #expect(setup.origin.requests.filter { $0.path == "/big" }.count == 1)

        // Not intercepted: curl sees the origin's own certificate, and the proxy adds nothing.
        let other = try await curl(
            "https://127.0.0.1:\(tunnelled.port)/",
            proxyPort: proxy,
            cacert: plainPKI.caFile
        )
        #expect(other.status == 0, "curl: \(other.stderr)")
        #expect(other.stdout.contains("tunnelled body"))
        #expect(!other.stdout.contains("Cache-Status"))
        #expect(other.stderr.contains("issuer: CN=Tunnelled Origin CA"), "\(other.stderr)")

        // Logged: each CONNECT, and the intercepted requests by their full URL.
        try await eventually("the access log lines") {
            served.child.standardError.components(separatedBy: "\"GET \(url) HTTP/1.1\" 200").count == 3
        }
        #expect(served.child.standardError.contains("\"CONNECT localhost:\(setup.origin.port) HTTP/1.1\" 200"))
        let metrics = try await request("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: try served.port("admin"))
        #expect(metrics.bodyText.contains("tollgate_interceptions_total 5\n"), "\(metrics.bodyText)")
        #expect(metrics.bodyText.contains("tollgate_interception_leaves_minted_total 1\n"))
        #expect(metrics.bodyText.contains("tollgate_interception_refused_hosts 0.0\n"), "swift-prometheus writes gauges as floats")
        #expect(metrics.bodyText.contains("tollgate_requests_total{cache=\"hit\"} 2\n"))
    }

    @Test("A client that refuses the minted certificate has the host tunnelled untouched from then on, logged once; other clients are still intercepted")
    func refusedCertificateIsRemembered() async throws {
        let setup = try await InterceptionSetup.make()
        defer { setup.stop() }
        let served = try await Served.start(["--config", try setup.configuration()], directory: setup.directory, lines: 1)
        defer { served.child.kill() }
        let proxy = try served.port("forward")
        let url = "https://localhost:\(setup.origin.port)/pinned"

        // This client trusts only the origin's CA (as a pinned app would): it refuses the minted leaf.
        let refused = try await curl(url, proxyPort: proxy, cacert: setup.pki.caFile)
        #expect(refused.status == 60, "curl: \(refused.stderr)")
        try await eventually("the refusal is logged") {
            served.child.standardError.contains("refused the certificate minted for localhost")
        }
        #expect(setup.origin.requestCount == 0)

        // From now on the same client reaches the origin itself, through a plain tunnel.
        let tunnelled = try await curl(url, proxyPort: proxy, cacert: setup.pki.caFile)
        #expect(tunnelled.status == 0, "curl: \(tunnelled.stderr)")
        #expect(tunnelled.stdout.contains("intercepted body /pinned"))
        #expect(!tunnelled.stdout.contains("Cache-Status"))
        #expect(tunnelled.stderr.contains("issuer: CN=Origin CA"))
        #expect(setup.origin.requestCount == 1)
        let again = try await curl(url, proxyPort: proxy, cacert: setup.pki.caFile)
        #expect(again.status == 0)
        #expect(served.child.standardError.components(separatedBy: "refused the certificate minted").count == 2)

        // Another client address (one that trusts the proxy's CA) is still intercepted and cached.
        let other = try await curl(url, proxyPort: proxy, cacert: setup.interceptionCA, from: "127.0.0.2")
        #expect(other.status == 0, "curl: \(other.stderr)")
        #expect(other.stdout.contains("Cache-Status: tollgate;"), "\(other.stdout)")
        #expect(other.stderr.contains("issuer: CN=Tollgate"), "\(other.stderr)")
    }

    @Test("log.level: warning hides the refusal notice; the host is still tunnelled from then on")
    func logLevelFiltersNotices() async throws {
        let setup = try await InterceptionSetup.make()
        defer { setup.stop() }
        let served = try await Served.start(
            ["--config", try setup.configuration(logLevel: "warning")],
            directory: setup.directory,
            lines: 1
        )
        defer { served.child.kill() }
        let proxy = try served.port("forward")
        let url = "https://localhost:\(setup.origin.port)/quiet"
        let refused = try await curl(url, proxyPort: proxy, cacert: setup.pki.caFile)
        #expect(refused.status == 60)
        try await eventually("the CONNECT is logged") { served.child.standardError.contains("\"CONNECT localhost:") }
        let tunnelled = try await curl(url, proxyPort: proxy, cacert: setup.pki.caFile)
        #expect(tunnelled.status == 0, "curl: \(tunnelled.stderr)")
        #expect(!served.child.standardError.contains("refused the certificate"), "\(served.child.standardError)")
    }

    @Test("Inside the tunnel the upstream is verified under the host's trust: an untrusted origin gets 502 upstream-tls-untrusted")
    func upstreamVerifiedInside() async throws {
        let setup = try await InterceptionSetup.make()
        defer { setup.stop() }
        // The rule trusts only the system roots, which did not sign the origin's certificate.
        let served = try await Served.start(
            ["--config", try setup.configuration(roots: "system")],
            directory: setup.directory,
            lines: 1
        )
        defer { served.child.kill() }
        let result = try await curl(
            "https://localhost:\(setup.origin.port)/",
            proxyPort: try served.port("forward"),
            cacert: setup.interceptionCA
        )
        #expect(result.status == 0, "curl: \(result.stderr)")
        #expect(result.stdout.contains("HTTP/1.1 502"), "\(result.stdout)")
        #expect(result.stdout.contains("Tollgate-Error: upstream-tls-untrusted"))
        #expect(setup.origin.requestCount == 0)
    }

    @Test("serve refuses to start when a rule intercepts and there is no CA, and warns about a CA near its end")
    func startUpChecks() async throws {
        let setup = try await InterceptionSetup.make()
        defer { setup.stop() }
        let binary = try #require(tollgateBinary)
        let configuration = try setup.configuration()

        try FileManager.default.removeItem(atPath: setup.caDirectory)
        let missing = try await ChildProcess.run(binary, ["serve", "--config", configuration])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("no interception CA in \(setup.caDirectory)"), "\(missing.stderr)")
        #expect(missing.stderr.contains("tollgate ca init"))

        // A CA with ten days left: the proxy starts and says so.
        try FileManager.default.createDirectory(atPath: setup.caDirectory, withIntermediateDirectories: true)
        let ending = try CertificateAuthority.create(commonName: "Ending CA", validityDays: 10, notBeforeOffset: 0)
        try ending.privateKey.write(toPEMFile: setup.caDirectory + "/ca.key")
        try ending.certificate.pemString.write(toFile: setup.interceptionCA, atomically: true, encoding: .utf8)
        let served = try await Served.start(["--config", configuration], directory: setup.directory, lines: 1)
        defer { served.child.kill() }
        try await eventually("the warning") { served.child.standardError.contains("expires on") }
        #expect(served.child.standardError.contains("warning: the interception CA \(setup.interceptionCA)"))
    }
}
