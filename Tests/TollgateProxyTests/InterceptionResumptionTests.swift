import Foundation
import Testing
import TollgateHTTP
import TollgateTesting

/// An intercepted CONNECT's TLS (the minted leaf) issues session tickets: a client that tunnels to
/// the host again resumes instead of a full handshake.
@Suite(
    "Interception: a client resumes its TLS session with the minted leaf (the built executable, openssl s_client -proxy)",
    .timeLimit(.minutes(1)),
    .enabled(if: tollgateBinary != nil && FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"))
)
struct InterceptionResumptionTests {
    @Test("The second tunnel to an intercepted host resumes the first one's session, and its request is served")
    func resumesThroughTheTunnel() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let pki = try TestPKI(host: "reg.test")
        let origin = try await LoopbackOrigin.start(tls: pki.serverConfiguration) { _, respond in
            respond.send(status: 200, headers: ["Cache-Control": "no-store"], body: "from the registry\n")
        }
        defer { origin.stop() }
        let (config, caFile) = try await interceptingConfiguration(directory: directory, registries: [("reg.test", pki, origin.port)])
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 1)
        defer { served.child.kill() }
        let session = directory.appendingPathComponent("session.pem").path
        var outcomes: [String] = []
        for store in ["-sess_out", "-sess_in"] {
            let client = try await ChildProcess.run(
                "/bin/sh",
                [
                    "-c",
                    "printf 'GET /p HTTP/1.1\\r\\nHost: reg.test\\r\\nConnection: close\\r\\n\\r\\n' | openssl s_client -proxy 127.0.0.1:\(try served.port("forward")) "
                        + "-connect reg.test:443 -servername reg.test -CAfile \(caFile) -verify_return_error -tls1_3 \(store) \(session) -ign_eof 2>/dev/null",
                ]
            )
            #expect(client.stdout.contains("from the registry"), "\(client.stdout)")
            outcomes.append(client.stdout.split(separator: "\n").first { $0.hasPrefix("New,") || $0.hasPrefix("Reused,") }.map(String.init) ?? "")
        }
        #expect(outcomes[0].hasPrefix("New, TLSv1.3") && outcomes[1].hasPrefix("Reused, TLSv1.3"), "\(outcomes)")
    }
}
