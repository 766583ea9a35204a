import Foundation
import Testing
import TollgateTesting

/// Debian's `docker-registry` (the CNCF distribution registry, 2.8) serving HTTPS on 127.0.0.1
/// with a test CA's certificate, its storage in a temporary directory: a real registry for the
/// container image tests.
final class DistributionRegistry: Sendable {
    let port: Int
    private let process: ChildProcess

    private init(port: Int, process: ChildProcess) {
        self.port = port
        self.process = process
    }

    /// The `docker-registry` executable, when installed.
    static var executable: String? { executableOnPath("docker-registry") }

    /// Starts one presenting `pki`'s server certificate (minted for `host`), its files
    /// and storage under `directory`.
    static func start(pki: TestPKI, host: String, directory: URL) async throws -> DistributionRegistry {
        let executable = try #require(executable)
        let files = try pki.writeServerFiles(in: directory)
        for _ in 0..<5 {
            let port = ClosedPort().port
            let configuration = directory.appendingPathComponent("registry.yml")
            try """
                version: 0.1
                log: { level: error }
                storage:
                  filesystem: { rootdirectory: "\(directory.appendingPathComponent("storage").path)" }
                http:
                  addr: "127.0.0.1:\(port)"
                  tls: { certificate: "\(files.certificate)", key: "\(files.key)" }
                """.write(to: configuration, atomically: true, encoding: .utf8)
            let process = try ChildProcess(executable, ["serve", configuration.path])
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline, process.isRunning {
                let probe = try await ChildProcess.run(
                    "/usr/bin/curl",
                    [
                        "-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", pki.caFile,
                        "--resolve", "\(host):\(port):127.0.0.1", "https://\(host):\(port)/v2/",
                    ]
                )
                if probe.stdout == "200" { return DistributionRegistry(port: port, process: process) }
                try await Task.sleep(for: .milliseconds(100))
            }
            process.kill()
        }
        throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "docker-registry did not start"])
    }

    func stop() {
        process.kill()
    }
}
