import Foundation
import Testing
import TollgateTLS
import TollgateTesting

/// `tollgate trust check`: one connection made as the proxy would under a configuration's rules,
/// and the trust policy's verdict on it.
@Suite(
    "tollgate trust check",
    .enabled(if: CommandLineRunner.binary != nil, Comment(rawValue: CommandLineRunner.notFound)),
    .timeLimit(.minutes(1))
)
struct TrustCheckCommandTests {
    /// A configuration whose one rule, for `match`, has `rule` (YAML lines after `match`).
    private func configuration(match: String, _ rule: String) throws -> String {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-trust-check-\(UUID().uuidString).yaml").path
        try """
            hosts:
              - match: "\(match)"
            \(rule.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
            """.write(toFile: file, atomically: true, encoding: .utf8)
        RemovedAtExit.add(file)
        return file
    }

    @Test("Trusted under the rule's roots, pins and lists: exit 0, the chain with its expiry, the lists' next updates")
    func trusted() async throws {
        let pki = try TestPKI()
        let origin = try await LoopbackOrigin.start(tls: pki.serverConfiguration) { _, respond in respond.send(status: 200) }
        defer { origin.stop() }
        let crl = try await TestCRL(authority: pki.authority).writeCRL()
        let file = try configuration(match: "127.0.0.1", """
            trust: { roots: "\(pki.caFile)", pins: ["\(pki.server.certificate.spkiPin)"], crls: "\(crl)" }
            """)
        let result = try await CommandLineRunner.run(["trust", "check", "127.0.0.1:\(origin.port)", "--config", file])
        #expect(result.status == 0, "\(result)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "rule: hosts[0] (127.0.0.1)", "\(result.stdout)")
        #expect(lines.contains { $0.hasPrefix("crl \(crl): CN=Tollgate Test CA, 0 revoked, next update ") }, "\(result.stdout)")
        #expect(lines.contains { $0.hasPrefix("\(pki.server.certificate.spkiPin)  CN=127.0.0.1  expires ") })
        #expect(lines.last == "trusted: the proxy would connect to 127.0.0.1:\(origin.port)")
        // The embedded default's rule: the system roots do not know the test CA.
        let plain = try await CommandLineRunner.run(["trust", "check", "127.0.0.1:\(origin.port)"])
        #expect(plain.status == 1)
        #expect(plain.stdout.hasPrefix("rule: hosts[0] (**)\n"), "\(plain.stdout)")
        #expect(plain.stdout.contains("refused: refused 127.0.0.1:\(origin.port): untrusted certificate"), "\(plain.stdout)")
    }

    @Test("Refused for a pin that does not match and for a revoked leaf, exit 1 saying why; a reported mismatch is exit 0")
    func refused() async throws {
        let pki = try TestPKI()
        let origin = try await LoopbackOrigin.start(tls: pki.serverConfiguration) { _, respond in respond.send(status: 200) }
        defer { origin.stop() }
        let stranger = try PrivateKey(generating: .ecP256).spkiPin
        let pinned = try configuration(match: "127.0.0.1", "trust: { roots: \"\(pki.caFile)\", pins: [\"\(stranger)\"] }")
        let mismatch = try await CommandLineRunner.run(["trust", "check", "127.0.0.1:\(origin.port)", "--config", pinned])
        #expect(mismatch.status == 1)
        #expect(mismatch.stdout.contains("refused: pin mismatch for 127.0.0.1: expected \(stranger)"), "\(mismatch.stdout)")
        let reported = try configuration(match: "127.0.0.1", "trust: { roots: \"\(pki.caFile)\", pins: [\"\(stranger)\"], pin-mode: report }")
        let report = try await CommandLineRunner.run(["trust", "check", "127.0.0.1:\(origin.port)", "--config", reported])
        #expect(report.status == 0, "\(report)")
        #expect(report.stdout.contains("trusted, with a report: pin mismatch"), "\(report.stdout)")

        let crls = try TestCRL(authority: pki.authority)
        try await crls.revoke(pki.server.certificate)
        let revoking = try configuration(match: "127.0.0.1", "trust: { roots: \"\(pki.caFile)\", crls: \"\(try await crls.writeCRL())\" }")
        let revoked = try await CommandLineRunner.run(["trust", "check", "127.0.0.1:\(origin.port)", "--config", revoking])
        #expect(revoked.status == 1)
        #expect(revoked.stdout.contains("certificate revoked"), "\(revoked.stdout)")
        #expect(revoked.stdout.contains("1 revoked"))
    }

    @Test("A connect-to rule: the name is sent and checked, the rule's first target dialled")
    func connectTo() async throws {
        let pki = try TestPKI(host: "api.test")
        let origin = try await LoopbackOrigin.start(tls: pki.serverConfiguration) { _, respond in respond.send(status: 200) }
        defer { origin.stop() }
        let file = try configuration(match: "api.test", """
            connect-to: "127.0.0.1:\(origin.port)"
            trust: { roots: "\(pki.caFile)" }
            """)
        let result = try await CommandLineRunner.run(["trust", "check", "api.test", "--config", file])
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("connect-to: 127.0.0.1:\(origin.port) (the rule's first target)"), "\(result.stdout)")
        #expect(result.stdout.contains("trusted: the proxy would connect to api.test:443"))
    }
}
