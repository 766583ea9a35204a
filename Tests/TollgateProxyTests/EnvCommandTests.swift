import Foundation
import Testing
import TollgateHTTP
import TollgateTLS
import TollgateTesting

/// `tollgate env`: shell lines that point tools at the proxy and its CA, `eval`ed by a real shell
/// and used by real clients (curl, Python's urllib) that are given nothing else.
@Suite(
    "tollgate env: the shell lines that point tools at the proxy (the built executable, sh, curl, python3)",
    .timeLimit(.minutes(1)),
    .enabled(if: tollgateBinary != nil && FileManager.default.isExecutableFile(atPath: "/usr/bin/curl"))
)
struct EnvCommandTests {
    /// A configuration with a forward listener on `port` (a free one unless given), the CA
    /// directory `ca`, and `hosts` lines.
    private func configuration(in directory: URL, port: Int, more: String = "") throws -> String {
        let file = directory.appendingPathComponent("tollgate.yaml").path
        try """
            listen:
              - address: "127.0.0.1:\(port)"
            cache:
              path: "\(directory.appendingPathComponent("cache").path)"
            interception:
              ca-dir: "\(directory.appendingPathComponent("ca").path)"
            \(more)
            """.write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }

    @Test("Without a CA: the proxy variables only, a comment saying why; fish's form; --unset; a listener on port 0 is refused")
    func proxyLinesOnly() async throws {
        let binary = try #require(tollgateBinary)
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = try configuration(in: directory, port: 18_999)
        let sh = try await ChildProcess.run(binary, ["env", "--config", file])
        #expect(sh.status == 0, "\(sh.stderr)")
        #expect(sh.stdout.contains("export http_proxy='http://127.0.0.1:18999'\n"), "\(sh.stdout)")
        #expect(sh.stdout.contains("export HTTPS_PROXY='http://127.0.0.1:18999'\n"))
        #expect(sh.stdout.contains("export no_proxy='localhost,127.0.0.1,::1'\n"))
        #expect(sh.stdout.contains("# no interception CA in \(directory.appendingPathComponent("ca").path)"))
        #expect(!sh.stdout.contains("SSL_CERT_FILE"))
        let fish = try await ChildProcess.run(binary, ["env", "--config", file, "--shell", "fish"])
        #expect(fish.stdout.contains("set -gx https_proxy 'http://127.0.0.1:18999'\n"), "\(fish.stdout)")
        let unset = try await ChildProcess.run(binary, ["env", "--unset"])
        #expect(unset.stdout.contains("unset https_proxy\n"))
        #expect(unset.stdout.contains("unset SSL_CERT_FILE\n"))
        #expect(unset.stdout.contains("unset NODE_EXTRA_CA_CERTS\n"))
        let anyPort = try configuration(in: directory, port: 0)
        let refused = try await ChildProcess.run(binary, ["env", "--config", anyPort])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("takes any free port when it starts"), "\(refused.stderr)")
        // The embedded default: 127.0.0.1:3128.
        let embedded = try await ChildProcess.run(binary, ["env", "--ca-dir", directory.appendingPathComponent("none").path])
        #expect(embedded.stdout.contains("export http_proxy='http://127.0.0.1:3128'\n"), "\(embedded.stdout)")
    }

    @Test("With a CA, eval'd by sh: curl and Python's urllib reach an intercepted https origin through the proxy and trust the minted leaf, given nothing else")
    func evaluatedByRealClients() async throws {
        let binary = try #require(tollgateBinary)
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let caDirectory = directory.appendingPathComponent("ca").path
        let created = try await ChildProcess.run(binary, ["ca", "init", "--dir", caDirectory])
        #expect(created.status == 0, "\(created.stderr)")
        // The origin's name does not resolve: the proxy's rule sends its connections to the origin.
        let pki = try TestPKI(commonName: "Origin CA", host: "origin.test")
        let origin = try await LoopbackOrigin.start(tls: pki.serverConfiguration) { request, respond in
            respond.send(status: 200, headers: ["Cache-Control": "max-age=300"], body: "origin says \(request.target)")
        }
        defer { origin.stop() }
        let port = ClosedPort().port
        let file = try configuration(
            in: directory, port: port,
            more: """
                access:
                  connect-ports: [\(origin.port)]
                hosts:
                  - match: origin.test
                    intercept: true
                    connect-to: "127.0.0.1:\(origin.port)"
                    trust: { roots: "\(pki.caFile)" }
                """
        )
        let served = try await Served.start(["--config", file], directory: directory, lines: 1)
        defer { served.child.kill() }

        let url = "https://origin.test:\(origin.port)"
        // Python's urllib too where there is a python3 (make test installs no Python of its own).
        let python = ["/usr/bin/python3", "/usr/local/bin/python3"].first { FileManager.default.isExecutableFile(atPath: $0) }
        let script = """
            eval "$('\(binary)' env --config '\(file)')" || exit 9
            curl -sS --max-time 20 '\(url)/curl' || exit 10
            echo
            \(python.map { "'\($0)' -c 'import urllib.request; print(urllib.request.urlopen(\"\(url)/python\", timeout=20).read().decode())' || exit 11" } ?? "")
            """
        let result = try await ChildProcess.run("/bin/sh", ["-c", script])
        #expect(result.status == 0, "\(result.stdout) \(result.stderr)")
        let expected = "origin says /curl\n" + (python == nil ? "" : "origin says /python\n")
        #expect(result.stdout == expected, "\(result.stdout) \(result.stderr)")
        #expect(origin.requestCount == (python == nil ? 1 : 2))

        // The bundle: the system's roots, then the CA.
        let bundle = try String(contentsOfFile: caDirectory + "/bundle.pem", encoding: .utf8)
        let ca = try String(contentsOfFile: caDirectory + "/ca.pem", encoding: .utf8)
        #expect(bundle.hasSuffix(ca))
        #expect(bundle.components(separatedBy: "-----BEGIN CERTIFICATE-----").count > 50, "the system roots come first")
        let printed = try await ChildProcess.run(binary, ["env", "--config", file])
        #expect(printed.stdout.contains("export SSL_CERT_FILE='\(caDirectory)/bundle.pem'\n"), "\(printed.stdout)")
        #expect(printed.stdout.contains("export NODE_EXTRA_CA_CERTS='\(caDirectory)/ca.pem'\n"))

        // A bundle that cannot be written (here a directory stands at its path; a read-only mount
        // does the same for a user) leaves those tools as they are, and the rest is still printed.
        try FileManager.default.removeItem(atPath: caDirectory + "/bundle.pem")
        try FileManager.default.createDirectory(atPath: caDirectory + "/bundle.pem/x", withIntermediateDirectories: true)
        let unwritable = try await ChildProcess.run(binary, ["env", "--config", file])
        #expect(unwritable.status == 0, "\(unwritable.stderr)")
        #expect(unwritable.stdout.contains("export https_proxy='http://127.0.0.1:\(port)'\n"), "\(unwritable.stdout)")
        #expect(unwritable.stdout.contains("# cannot write the bundle \(caDirectory)/bundle.pem"), "\(unwritable.stdout)")
        #expect(!unwritable.stdout.contains("SSL_CERT_FILE"))
        #expect(unwritable.stdout.contains("export NODE_EXTRA_CA_CERTS='\(caDirectory)/ca.pem'\n"))
    }
}
