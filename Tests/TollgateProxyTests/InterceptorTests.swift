import Foundation
import Testing
import TollgateProxy
import TollgateTLS

@Suite("Interceptor: minted leaves, the CA directory, refused hosts")
struct InterceptorTests {
    private func temporaryCADirectory() throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-ca-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }

    /// Writes a CA as `tollgate ca init` does: ca.pem, and ca.key with mode 0600.
    private func writeCA(_ authority: CertificateAuthority, to directory: String) throws {
        try authority.privateKey.write(toPEMFile: directory + "/ca.key")
        try authority.certificate.pemString.write(toFile: directory + "/ca.pem", atomically: true, encoding: .utf8)
    }

    @Test("A leaf is minted per host, verifies under the CA for that host only, and is reused until near its end")
    func mintsPerHost() throws {
        let authority = try CertificateAuthority.create(commonName: "Interception Test CA")
        let interceptor = try Interceptor(authority: authority)
        let verifier = try ChainVerifier(trustedCertificates: [authority.certificate], systemRoots: false)
        let now = Date()

        let example = try interceptor.serverContext(for: "Example.test", now: now)
        let chain = try #require(example.configuration.identity?.certificateChain)
        #expect(try verifier.verify(chain: chain, host: "example.test").count == 2)
        #expect(throws: CertificateVerificationError.self) { try verifier.verify(chain: chain, host: "other.test") }
        #expect(chain[0].notAfter.timeIntervalSince(now) <= Interceptor.leafLifetime)
        #expect(chain[0].notAfter > now.addingTimeInterval(Interceptor.leafLifetime / 2))

        // Cached: the same context while the leaf has time left; a new one near its end.
        #expect(try interceptor.serverContext(for: "example.test", now: now) === example)
        let later = now.addingTimeInterval(Interceptor.leafLifetime - Interceptor.renewalMargin)
        let renewed = try interceptor.serverContext(for: "example.test", now: later)
        #expect(renewed !== example)

        let address = try interceptor.serverContext(for: "127.0.0.1", now: now)
        let addressChain = try #require(address.configuration.identity?.certificateChain)
        #expect(try verifier.verify(chain: addressChain, host: "127.0.0.1").count == 2)
        #expect(throws: (any Error).self) { try interceptor.serverContext(for: "bad host name", now: now) }
    }

    @Test("A leaf never outlives the CA that signed it")
    func leafWithinCALifetime() throws {
        let now = Date()
        // A CA with about two hours left.
        let authority = try CertificateAuthority.create(
            commonName: "Ending CA", validityDays: 1, notBeforeOffset: -22 * 3600, now: now
        )
        let interceptor = try Interceptor(authority: authority)
        let leaf = try #require(try interceptor.serverContext(for: "example.test", now: now).configuration.identity)
        #expect(leaf.certificate.notAfter <= authority.certificate.notAfter)
        #expect(interceptor.expiryWarning(now: now)?.contains("expires on") == true)
    }

    @Test("A refused host is remembered once for the client that refused it; other hosts and other clients are not")
    func remembersRefusals() throws {
        let interceptor = try Interceptor(authority: try CertificateAuthority.create(commonName: "CA"))
        #expect(!interceptor.tunnelsUntouched("pinned.test", for: "10.0.0.2"))
        #expect(interceptor.rememberRefusal(of: "Pinned.test", by: "10.0.0.2", reason: "unknown CA"))
        #expect(!interceptor.rememberRefusal(of: "pinned.test", by: "10.0.0.2", reason: "bad certificate"))
        #expect(interceptor.tunnelsUntouched("PINNED.test", for: "10.0.0.2"))
        #expect(!interceptor.tunnelsUntouched("other.test", for: "10.0.0.2"))
        #expect(!interceptor.tunnelsUntouched("pinned.test", for: "10.0.0.3"))
        #expect(interceptor.rememberRefusal(of: "pinned.test", by: "10.0.0.3", reason: "unknown CA"))
        #expect(interceptor.refusedHosts == ["pinned.test"])
        #expect(interceptor.figures.refusedHosts == 1)
    }

    @Test("Loading the CA directory: a good CA loads; missing, world-readable key and expired CA are refused by name")
    func loadsDirectory() throws {
        let directory = try temporaryCADirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect {
            try Interceptor.load(directory: directory)
        } throws: { error in
            "\(error)".contains("no interception CA in \(directory)") && "\(error)".contains("tollgate ca init")
        }

        let authority = try CertificateAuthority.create(commonName: "Loaded CA")
        try writeCA(authority, to: directory)
        let loaded = try Interceptor.load(directory: directory)
        #expect(loaded.authority.certificate == authority.certificate)
        #expect(loaded.expiryWarning() == nil)

        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: directory + "/ca.key")
        #expect {
            try Interceptor.load(directory: directory)
        } throws: { error in
            "\(error)".contains("ca.key is readable by others") && "\(error)".contains("chmod 600")
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: directory + "/ca.key")

        #expect {
            try Interceptor.load(directory: directory, now: authority.certificate.notAfter.addingTimeInterval(60))
        } throws: { error in
            "\(error)".contains("expired") && "\(error)".contains("ca init --force")
        }
    }
}
