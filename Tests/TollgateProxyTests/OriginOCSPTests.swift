import Foundation
import Testing
import TollgateTLS
import TollgateTesting

/// `trust.ocsp`: the proxy asks an https origin for its OCSP response and judges what it staples
/// — origins here are `openssl s_server -status_file` with responses `openssl ocsp` made.
@Suite(
    "trust.ocsp: an origin's stapled OCSP response (openssl s_server, the built executable)",
    .serialized, .timeLimit(.minutes(1)), .enabled(if: tollgateBinary != nil)
)
struct OriginOCSPTests {
    @Test("require: served over a good staple; refused over a revoked one, none, or one another CA signed. check: only the revoked one is refused, and a must-staple certificate without its staple")
    func stapledResponses() async throws {
        let pki = try TestPKI(commonName: "Origin Root")
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let intermediate = try pki.authority.issueIntermediate(commonName: "Origin Intermediate")
        let leaf = try intermediate.issueLeaf(for: "127.0.0.1")
        let certificateFile = directory.appendingPathComponent("origin.pem").path
        let intermediateFile = directory.appendingPathComponent("intermediate.pem").path
        let keyFile = directory.appendingPathComponent("origin.key").path
        try leaf.certificate.pemString.write(toFile: certificateFile, atomically: true, encoding: .utf8)
        try intermediate.certificate.pemString.write(toFile: intermediateFile, atomically: true, encoding: .utf8)
        try leaf.privateKey.write(toPEMFile: keyFile)
        func staple(_ name: String, _ bytes: [UInt8]) throws -> String {
            let path = directory.appendingPathComponent(name).path
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            return path
        }
        let good = try staple("good.der", try await TestOCSPResponder.response(by: intermediate, for: leaf))
        let revoked = try staple("revoked.der", try await TestOCSPResponder.response(by: intermediate, for: leaf, status: .revoked))
        let forged = try staple(
            "forged.der", try await TestOCSPResponder.response(by: intermediate, for: leaf, signedBy: try CertificateAuthority.create(commonName: "Forger"))
        )
        var origins: [String: TLSTestServer] = [:]
        for (name, file) in [("good", good), ("revoked", revoked), ("forged", forged)] {
            origins[name] = try await TLSTestServer.start(identity: (certificateFile, keyFile, intermediateFile), statusFile: file)
        }
        origins["none"] = try await TLSTestServer.start(identity: (certificateFile, keyFile, intermediateFile))
        // A must-staple certificate (RFC 7633) that comes without a staple.
        let bound = try intermediate.issueLeaf(for: "127.0.0.1", mustStaple: true)
        let boundFile = directory.appendingPathComponent("bound.pem").path
        let boundKey = directory.appendingPathComponent("bound.key").path
        try bound.certificate.pemString.write(toFile: boundFile, atomically: true, encoding: .utf8)
        try bound.privateKey.write(toPEMFile: boundKey)
        origins["must-staple"] = try await TLSTestServer.start(identity: (boundFile, boundKey, intermediateFile))
        defer { for origin in origins.values { origin.stop() } }

        for mode in ["require", "check"] {
            let config = directory.appendingPathComponent("\(mode).yaml")
            try """
                listen:
                  - address: "127.0.0.1:0"
                access:
                  destinations:
                    - { allow: all }
                hosts:
                  - match: "127.0.0.1"
                    trust: { roots: ["\(pki.caFile)"], ocsp: \(mode) }
                """.write(to: config, atomically: true, encoding: .utf8)
            let served = try await Served.start(["--config", config.path], directory: directory, lines: 1)
            defer { served.child.kill() }
            let proxy = try served.port("forward")
            var statuses: [String: Int] = [:]
            for (name, origin) in origins {
                let authority = "127.0.0.1:\(origin.port)"
                let response = try await request("GET https://\(authority)/ HTTP/1.1\r\nHost: \(authority)\r\n\r\n", port: proxy)
                statuses[name] = response.status
                if response.status != 200 { #expect(response.header("Tollgate-Error") != nil, "\(name): \(response.bodyText)") }
            }
            if mode == "require" {
                #expect(statuses == ["good": 200, "revoked": 502, "none": 502, "forged": 502, "must-staple": 502], "\(statuses)")
                #expect(served.child.standardError.contains("revoked, says the stapled OCSP response"), "\(served.child.standardError)")
                #expect(served.child.standardError.contains("no OCSP response stapled"))
            } else {
                #expect(statuses == ["good": 200, "revoked": 502, "none": 200, "forged": 200, "must-staple": 502], "\(statuses)")
                #expect(served.child.standardError.contains("the certificate is must-staple"), "judged as require: \(served.child.standardError)")
            }
        }
    }
}
