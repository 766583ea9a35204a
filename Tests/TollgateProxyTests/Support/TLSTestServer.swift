import Foundation
import TollgateTesting

/// `openssl s_server -www` on 127.0.0.1 with a fresh self-signed certificate: a real TLS server
/// for CONNECT tests. It answers `GET /` with an HTML status page.
final class TLSTestServer: Sendable {
    private let process: ChildProcess
    private let directory: URL
    let port: Int

    private init(process: ChildProcess, directory: URL, port: Int) {
        self.process = process
        self.directory = directory
        self.port = port
    }

    /// Whether openssl is installed.
    static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl") }

    /// Starts it with a fresh self-signed certificate, or with `identity` (a certificate file, its
    /// key file, and a file of the intermediates sent after it, `-cert_chain`); with `statusFile`,
    /// it staples that DER OCSP response to handshakes that ask (`-status_file`).
    static func start(
        identity: (certificate: String, key: String, intermediates: String?)? = nil, statusFile: String? = nil
    ) async throws -> TLSTestServer {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "tollgate-tls-\(UUID().uuidString)"
        )
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var key = directory.appendingPathComponent("key.pem").path
        var certificate = directory.appendingPathComponent("cert.pem").path
        var more: [String] = statusFile.map { ["-status_file", $0] } ?? []
        if let identity {
            (certificate, key) = (identity.certificate, identity.key)
            if let intermediates = identity.intermediates { more += ["-cert_chain", intermediates] }
        } else {
            let made = try await ChildProcess.run(
                "/usr/bin/openssl",
                [
                    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key,
                    "-out", certificate, "-subj", "/CN=localhost", "-days", "1",
                ]
            )
            guard made.status == 0 else { throw WaitTimeout(what: "a certificate (openssl req: \(made.stderr))") }
        }
        let process = try ChildProcess(
            "/usr/bin/openssl",
            ["s_server", "-accept", "127.0.0.1:0", "-cert", certificate, "-key", key, "-www"] + more
        )
        do {
            try await eventually("openssl s_server's ACCEPT line") {
                process.standardOutput.contains("ACCEPT") || !process.isRunning
            }
            let line = process.standardOutput
            guard let match = line.firstMatch(of: #/ACCEPT 127\.0\.0\.1:(\d+)/#), let port = Int(match.1) else {
                throw WaitTimeout(what: "a port from openssl s_server: \(line) \(process.standardError)")
            }
            return TLSTestServer(process: process, directory: directory, port: port)
        } catch {
            process.kill()
            throw error
        }
    }

    func stop() {
        process.kill()
        try? FileManager.default.removeItem(at: directory)
    }
}
