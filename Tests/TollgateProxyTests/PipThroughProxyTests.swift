import Foundation
import Testing
import TollgateCache
import TollgateHTTP
import TollgateTesting

/// python3 when pip can run (`make test` installs Python modules with it).
private let pythonWithPip: String? = python3(importing: "pip")

/// The CI use with a real package manager: pip resolves and downloads a package from an https
/// index through the proxy (the index host intercepted), then does it again with the index gone,
/// from the proxy offline on the cache opened read-only.
@Suite(
    "pip through the proxy, online then offline (the built executable)",
    .serialized,
    .timeLimit(.minutes(2)),
    .enabled(if: tollgateBinary != nil && pythonWithPip != nil, "needs the tollgate binary and python3 with pip")
)
struct PipThroughProxyTests {
    @Test("pip download through an intercepting proxy; then offline, read-only, the same bytes with the index gone")
    func warmThenOffline() async throws {
        let python = try #require(pythonWithPip)
        let binary = try #require(tollgateBinary)
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let wheel = try await makeWheel(python: python, at: directory.appendingPathComponent("built.whl").path)
        let wheelName = "tgdemo-1.0-py3-none-any.whl"
        let wheelDigest = SHA256.hex(SHA256.hash(wheel))
        let pki = try TestPKI(commonName: "Index CA", host: "localhost")
        // A PEP 503 simple index: pip asks for the project page (with Cache-Control: max-age=0)
        // and then the file it links, checking the digest in the link's fragment.
        let origin = try await LoopbackOrigin.start(tls: pki.serverConfiguration) { request, respond in
            switch request.path {
            case "/simple/tgdemo/":
                respond.send(
                    status: 200, headers: ["Content-Type": "text/html", "Cache-Control": "max-age=600", "ETag": "\"index-1\""],
                    body: "<html><body><a href=\"/files/\(wheelName)#sha256=\(wheelDigest)\">\(wheelName)</a></body></html>"
                )
            case "/files/\(wheelName)":
                respond.send(status: 200, headers: ["Content-Type": "application/octet-stream", "Cache-Control": "max-age=86400"], bytes: wheel)
            default:
                respond.send(status: 404, body: "no such page")
            }
        }
        defer { origin.stop() }

        let caDirectory = directory.appendingPathComponent("ca").path
        let created = try await ChildProcess.run(binary, ["ca", "init", "--dir", caDirectory])
        #expect(created.status == 0, "\(created.stderr)")
        let interceptionCA = caDirectory + "/ca.pem"
        let accessLog = directory.appendingPathComponent("access.log")
        let config = directory.appendingPathComponent("tollgate.yaml")
        func writeConfiguration(readOnly: Bool) throws {
            try """
            listen:
              - address: "127.0.0.1:0"
            access:
              connect-ports: [\(origin.port)]
            cache:
              path: "\(directory.appendingPathComponent("cache").path)"
              read-only: \(readOnly)
            hosts:
              - match: "localhost"
                intercept: true
                trust:
                  roots: ["\(pki.caFile)"]
            interception:
              ca-dir: "\(caDirectory)"
            log:
              access: "\(accessLog.path)"
              format: json
            """.write(to: config, atomically: true, encoding: .utf8)
        }

        /// `pip download tgdemo==1.0` into `into` through the proxy on `port`, trusting the proxy's CA.
        func pipDownload(port: Int, into: URL) async throws -> (status: Int32, stdout: String, stderr: String) {
            try await ChildProcess.run(
                python,
                [
                    "-m", "pip", "download", "--no-deps", "--no-cache-dir", "--disable-pip-version-check", "--retries", "0",
                    "--timeout", "20", "--dest", into.path, "--index-url", "https://localhost:\(origin.port)/simple/",
                    "--proxy", "http://127.0.0.1:\(port)", "--cert", interceptionCA, "tgdemo==1.0",
                ],
                // The machine's pip settings (another index, find-links, a CA bundle in the
                // environment that requests prefers, hosts that bypass proxies) stay out of it.
                environment: [
                    "PIP_CONFIG_FILE": "/dev/null", "PIP_CERT": interceptionCA, "REQUESTS_CA_BUNDLE": interceptionCA,
                    "CURL_CA_BUNDLE": interceptionCA, "NO_PROXY": "", "no_proxy": "",
                ]
            )
        }

        try writeConfiguration(readOnly: false)
        do {
            let online = try await Served.start(["--config", config.path], directory: directory, lines: 1)
            defer { online.child.kill() }
            let first = directory.appendingPathComponent("first")
            let fetched = try await pipDownload(port: try online.port("forward"), into: first)
            #expect(fetched.status == 0, "pip: \(fetched.stdout) \(fetched.stderr)")
            #expect(Array(try Data(contentsOf: first.appendingPathComponent(wheelName))) == wheel)
            online.child.send(SIGTERM)
            _ = try await online.child.waitForExit()
        }
        let onlineLog = try String(contentsOf: accessLog, encoding: .utf8)
        #expect(onlineLog.contains("\"target\":\"https://localhost:\(origin.port)/files/\(wheelName)\""), "\(onlineLog)")
        #expect(onlineLog.contains("\"stored\":true"), "\(onlineLog)")

        origin.stop()
        try writeConfiguration(readOnly: true)
        try FileManager.default.removeItem(at: accessLog)
        let offline = try await Served.start(["--config", config.path, "--offline"], directory: directory, lines: 1)
        defer { offline.child.kill() }
        let second = directory.appendingPathComponent("second")
        let served = try await pipDownload(port: try offline.port("forward"), into: second)
        #expect(served.status == 0, "pip offline: \(served.stdout) \(served.stderr)")
        #expect(Array(try Data(contentsOf: second.appendingPathComponent(wheelName))) == wheel)
        offline.child.send(SIGTERM)
        _ = try await offline.child.waitForExit()
        let offlineLog = try String(contentsOf: accessLog, encoding: .utf8)
        let requests = offlineLog.split(separator: "\n").filter { $0.contains("\"method\":\"GET\"") }
        #expect(requests.count == 2, "\(offlineLog)")
        #expect(requests.allSatisfy { $0.contains("\"cache\":\"hit\"") }, "\(offlineLog)")
    }
}
