import Foundation
import NIOCore
import Testing
import TollgateTLS
import struct TollgateTesting.TestCRL

/// Revocation lists issued by the `openssl ca` command, read by ``CertificateRevocationList`` and
/// checked by ``ChainVerifier`` and in handshakes.
@Suite("Certificate revocation lists", .timeLimit(.minutes(2)))
struct RevocationListTests {
    @Test("a CRL file is read as PEM or DER, with its issuer, dates and revoked count")
    func reading() async throws {
        let ca = try CertificateAuthority.create(commonName: "CRL Reading CA")
        let crls = try TestCRL(authority: ca)
        try await crls.revoke(try ca.issueLeaf(for: "gone.example").certificate)
        let pem = try await crls.writeCRL()
        let der = try await crls.writeCRL(der: true)
        let fromPEM = try #require(try CertificateRevocationList.lists(inFile: pem).first)
        #expect(fromPEM.issuer == "CN=CRL Reading CA")
        #expect(fromPEM.revokedCount == 1)
        let nextUpdate = try #require(fromPEM.nextUpdate)
        #expect(abs(nextUpdate.timeIntervalSinceNow - 86_400) < 120)
        #expect(!fromPEM.hasExpired())
        #expect(fromPEM.hasExpired(at: Date().addingTimeInterval(2 * 86_400)))
        let fromDER = try CertificateRevocationList.lists(inFile: der)
        #expect(fromDER.count == 1)
        #expect(fromDER.first?.issuer == "CN=CRL Reading CA")
        #expect(fromDER.first?.revokedCount == 1)
        // A list that revokes nothing says 0.
        let empty = try CertificateRevocationList.lists(inFile: try await TestCRL(authority: ca).writeCRL())
        #expect(empty.first?.revokedCount == 0)
    }

    @Test("a file with no CRL, or a damaged one, is refused with its name")
    func damaged() throws {
        let ca = try CertificateAuthority.create(commonName: "Not a CRL CA")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-not-crl-\(UUID().uuidString).pem")
        defer { try? FileManager.default.removeItem(at: file) }
        try ca.certificate.pemString.write(to: file, atomically: true, encoding: .utf8)
        let error = #expect(throws: OpenSSLError.self) { try CertificateRevocationList.lists(inFile: file.path) }
        #expect(error?.message.contains("no CRL in \(file.path)") == true)
        try Data([0x30, 0x03, 0x01, 0x02]).write(to: file)
        #expect(throws: OpenSSLError.invalidDER) { try CertificateRevocationList.lists(inFile: file.path) }
        #expect(throws: OpenSSLError.io) { try CertificateRevocationList.lists(inFile: file.path + ".missing") }
    }

    @Test("a revoked leaf fails with certificate revoked; another leaf of the same CA verifies")
    func revokedLeaf() async throws {
        let ca = try CertificateAuthority.create(commonName: "Revoking CA")
        let revoked = try ca.issueLeaf(for: "revoked.example").certificate
        let kept = try ca.issueLeaf(for: "kept.example").certificate
        let crls = try TestCRL(authority: ca)
        try await crls.revoke(revoked)
        let lists = try CertificateRevocationList.lists(inFile: try await crls.writeCRL())
        let verifier = try ChainVerifier(trustedCertificates: [ca.certificate], revocationLists: lists)
        #expect(verifier.checksRevocation)
        #expect(try verifier.verify(chain: [kept], host: "kept.example") == [kept, ca.certificate])
        let error = #expect(throws: CertificateVerificationError.self) {
            try verifier.verify(chain: [revoked], host: "revoked.example")
        }
        #expect(error?.code == .certificateRevoked)
        #expect(error?.reason == "certificate revoked")
        #expect(error?.depth == 0)
        // Without the list the same chain verifies: the list is what refused it.
        let plain = try ChainVerifier(trustedCertificates: [ca.certificate])
        #expect(!plain.checksRevocation)
        #expect(try plain.verify(chain: [revoked], host: "revoked.example").count == 2)
    }

    @Test("every certificate but the anchor needs its issuer's CRL: the intermediate's alone is not enough")
    func wholeChain() async throws {
        let root = try CertificateAuthority.create(commonName: "CRL Root")
        let intermediate = try root.issueIntermediate(commonName: "CRL Intermediate")
        let leaf = try intermediate.issueLeaf(for: "deep.example")
        let fromIntermediate = try CertificateRevocationList.lists(inFile: try await TestCRL(authority: intermediate).writeCRL())
        let fromRoot = try CertificateRevocationList.lists(inFile: try await TestCRL(authority: root).writeCRL())
        let partial = try ChainVerifier(trustedCertificates: [root.certificate], revocationLists: fromIntermediate)
        let error = #expect(throws: CertificateVerificationError.self) {
            try partial.verify(chain: leaf.certificateChain, host: "deep.example")
        }
        #expect(error?.code == .unableToGetCRL)
        #expect(error?.depth == 1)
        let whole = try ChainVerifier(trustedCertificates: [root.certificate], revocationLists: fromIntermediate + fromRoot)
        #expect(try whole.verify(chain: leaf.certificateChain, host: "deep.example").count == 3)

        // The root revokes the intermediate: every leaf under it fails.
        let rootCRLs = try TestCRL(authority: root)
        try await rootCRLs.revoke(intermediate.certificate)
        let revokedIntermediate = try CertificateRevocationList.lists(inFile: try await rootCRLs.writeCRL())
        let refusing = try ChainVerifier(trustedCertificates: [root.certificate], revocationLists: fromIntermediate + revokedIntermediate)
        let revoked = #expect(throws: CertificateVerificationError.self) {
            try refusing.verify(chain: leaf.certificateChain, host: "deep.example")
        }
        #expect(revoked?.code == .certificateRevoked)
        #expect(revoked?.depth == 1)
    }

    @Test("a CRL past its nextUpdate fails the chains it covers")
    func expired() async throws {
        let ca = try CertificateAuthority.create(commonName: "Lapsing CA")
        let leaf = try ca.issueLeaf(for: "lapsed.example").certificate
        let lists = try CertificateRevocationList.lists(inFile: try await TestCRL(authority: ca).writeCRL(validFor: 60))
        let verifier = try ChainVerifier(trustedCertificates: [ca.certificate], revocationLists: lists)
        #expect(try verifier.verify(chain: [leaf], host: "lapsed.example").count == 2)
        let error = #expect(throws: CertificateVerificationError.self) {
            try verifier.verify(chain: [leaf], host: "lapsed.example", at: Date().addingTimeInterval(3600))
        }
        #expect(error?.code == .crlHasExpired)
        #expect(error?.reason == "CRL has expired")
    }

    @Test("a server requiring client certificates refuses a revoked one in the handshake, and contexts differ by their lists")
    func handshake() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let revokedAgent = try pki.ca.issueLeaf(for: "revoked-agent", usage: .clientAuth)
        let keptAgent = try pki.ca.issueLeaf(for: "kept-agent", usage: .clientAuth)
        let crls = try TestCRL(authority: pki.ca)
        try await crls.revoke(revokedAgent.certificate)
        let crlFile = try await crls.writeCRL()
        let server = try await LoopbackTLSServer.start(
            context: try pki.serverContext {
                $0.clientCertificateRequirement = .required
                $0.trustRoots = TrustRoots(certificates: [pki.ca.certificate], revocationListFiles: [crlFile])
            }
        )
        let refused = ConnectionLog()
        _ = try await connectTLSClient(
            port: server.port,
            context: try pki.clientContext { $0.identity = revokedAgent },
            serverHostname: "localhost",
            log: refused
        )
        try await waitUntil("the revoked client is turned away") { refused.isInactive }
        #expect(refused.tlsErrors.first == .alertReceived)
        try await waitUntil("the server records why") { !server.log.tlsErrors.isEmpty }
        let serverError = try #require(server.log.tlsErrors.first)
        #expect(serverError == .peerUntrusted)
        #expect(serverError.verificationError?.code == .certificateRevoked)

        let accepted = ConnectionLog()
        let client = try await connectTLSClient(
            port: server.port,
            context: try pki.clientContext { $0.identity = keptAgent },
            serverHostname: "localhost",
            log: accepted
        )
        try await client.send("still trusted")
        try await waitUntil("the echo arrives") { accepted.receivedText == "still trusted" }
        try await client.close()
        await server.stop()

        // The context cache keys on the lists: a new list is a new context.
        let cache = TLSContextCache()
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.trustRoots = TrustRoots(certificates: [pki.ca.certificate])
        let without = try cache.context(for: configuration)
        configuration.trustRoots.revocationLists = try CertificateRevocationList.lists(inFile: crlFile)
        let with = try cache.context(for: configuration)
        #expect(without !== with)
        #expect(try cache.context(for: configuration) === with)
    }
}
