import Foundation
import Testing
import TollgateTLS

@Suite("ChainVerifier")
struct ChainVerifierTests {
    @Test("a leaf from a trusted CA verifies for its host and returns the chain to the CA")
    func leafVerifies() throws {
        let ca = try CertificateAuthority.create(commonName: "Trusted CA")
        let leaf = try ca.issueLeaf(for: "good.example").certificate
        let verifier = try ChainVerifier(trustedCertificates: [ca.certificate])
        #expect(try verifier.verify(chain: [leaf], host: "good.example") == [leaf, ca.certificate])
        #expect(try verifier.verify(chain: [leaf], host: "GOOD.example") == [leaf, ca.certificate])
        #expect(try verifier.verify(chain: [leaf], host: nil) == [leaf, ca.certificate])
    }

    @Test("the wrong host name fails with a hostname mismatch")
    func wrongHost() throws {
        let ca = try CertificateAuthority.create(commonName: "Host CA")
        let leaf = try ca.issueLeaf(for: "good.example").certificate
        let verifier = try ChainVerifier(trustedCertificates: [ca.certificate])
        let error = #expect(throws: CertificateVerificationError.self) {
            try verifier.verify(chain: [leaf], host: "evil.example")
        }
        #expect(error?.code == .hostnameMismatch)
        #expect(error?.reason == "hostname mismatch")
        #expect(error?.host == "evil.example")
        #expect(error?.description.contains("for evil.example: hostname mismatch") == true)
    }

    @Test("a wildcard leaf matches one label only")
    func wildcard() throws {
        let ca = try CertificateAuthority.create(commonName: "Wildcard CA")
        let leaf = try ca.issueLeaf(for: "*.example.com").certificate
        let verifier = try ChainVerifier(trustedCertificates: [ca.certificate])
        #expect(try verifier.verify(chain: [leaf], host: "a.example.com").count == 2)
        let error = #expect(throws: CertificateVerificationError.self) {
            try verifier.verify(chain: [leaf], host: "a.b.example.com")
        }
        #expect(error?.code == .hostnameMismatch)
    }

    @Test("an expired leaf fails with certificate has expired")
    func expiredLeaf() throws {
        let ca = try CertificateAuthority.create(commonName: "Expiry CA")
        let leaf = try ca.issueLeaf(for: "old.example", validity: day, notBeforeOffset: -10 * day).certificate
        let verifier = try ChainVerifier(trustedCertificates: [ca.certificate])
        let error = #expect(throws: CertificateVerificationError.self) {
            try verifier.verify(chain: [leaf], host: "old.example")
        }
        #expect(error?.code == .certificateHasExpired)
        #expect(error?.reason == "certificate has expired")
        #expect(error?.depth == 0)
        #expect(error?.subject == "CN=old.example")
    }

    @Test("verification happens at the given time")
    func verificationTime() throws {
        let ca = try CertificateAuthority.create(commonName: "Time CA", validityDays: 30, now: referenceDate)
        let leaf = try ca.issueLeaf(for: "time.example", validity: 7 * day, now: referenceDate).certificate
        let verifier = try ChainVerifier(trustedCertificates: [ca.certificate])
        #expect(try verifier.verify(chain: [leaf], host: "time.example", at: referenceDate).count == 2)
        let later = #expect(throws: CertificateVerificationError.self) {
            try verifier.verify(chain: [leaf], host: "time.example", at: referenceDate.addingTimeInterval(8 * day))
        }
        #expect(later?.code == .certificateHasExpired)
        let earlier = #expect(throws: CertificateVerificationError.self) {
            try verifier.verify(chain: [leaf], host: "time.example", at: referenceDate.addingTimeInterval(-day))
        }
        #expect(earlier?.code == .certificateNotYetValid)
    }

    @Test("a self-signed leaf fails as self-signed")
    func selfSignedLeaf() throws {
        let selfSigned = try CertificateAuthority.create(commonName: "self.example").certificate
        let verifier = try ChainVerifier(trustedCertificates: [])
        let error = #expect(throws: CertificateVerificationError.self) {
            try verifier.verify(chain: [selfSigned], host: nil)
        }
        #expect(error?.code == .selfSignedLeaf)
        #expect(error?.reason == "self-signed certificate")
    }

    @Test("a chain to an unknown CA fails without the CA bundle and passes with it")
    func unknownCA() throws {
        let ca = try CertificateAuthority.create(commonName: "Private CA")
        let leaf = try ca.issueLeaf(for: "internal.example").certificate
        let systemOnly = try ChainVerifier(systemRoots: true)
        let error = #expect(throws: CertificateVerificationError.self) {
            try systemOnly.verify(chain: [leaf], host: "internal.example")
        }
        #expect(error?.code == .unableToGetLocalIssuerCertificate)
        #expect(error?.reason == "unable to get local issuer certificate")

        let withBundle = try ChainVerifier(trustedPEMBundles: [ca.certificate.pemString], systemRoots: true)
        #expect(try withBundle.verify(chain: [leaf], host: "internal.example") == [leaf, ca.certificate])
    }

    @Test("a CA bundle file can be the trust store")
    func caFile() throws {
        let ca = try CertificateAuthority.create(commonName: "File CA")
        let leaf = try ca.issueLeaf(for: "file.example").certificate
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("ca.pem").path
            try ca.certificate.pemString.write(to: URL(fileURLWithPath: path))
            let verifier = try ChainVerifier(trustedPEMFiles: [path])
            #expect(try verifier.verify(chain: [leaf], host: "file.example").count == 2)
        }
    }

    @Test("a three-level chain verifies with the intermediate presented and fails without it")
    func threeLevels() throws {
        let root = try CertificateAuthority.create(commonName: "Root")
        let intermediate = try root.issueIntermediate(commonName: "Intermediate")
        let identity = try intermediate.issueLeaf(for: "deep.example")
        let verifier = try ChainVerifier(trustedCertificates: [root.certificate])
        let verified = try verifier.verify(chain: identity.certificateChain, host: "deep.example")
        #expect(verified == [identity.certificate, intermediate.certificate, root.certificate])
        let error = #expect(throws: CertificateVerificationError.self) {
            try verifier.verify(chain: [identity.certificate], host: "deep.example")
        }
        #expect(error?.code == .unableToGetLocalIssuerCertificate)
    }

    @Test("an intermediate with pathlen 0 cannot issue another CA")
    func pathLength() throws {
        let root = try CertificateAuthority.create(commonName: "Root")
        let intermediate = try root.issueIntermediate(commonName: "Intermediate")
        let tooDeep = try intermediate.issueIntermediate(commonName: "Too Deep")
        let identity = try tooDeep.issueLeaf(for: "deeper.example")
        #expect(identity.certificateChain.count == 3)
        let verifier = try ChainVerifier(trustedCertificates: [root.certificate])
        let error = #expect(throws: CertificateVerificationError.self) {
            try verifier.verify(chain: identity.certificateChain, host: "deeper.example")
        }
        #expect(error?.code == .pathLengthExceeded)
    }

    @Test("an IP leaf verifies for its address and fails for another")
    func ipAddress() throws {
        let ca = try CertificateAuthority.create(commonName: "IP CA")
        let v4 = try ca.issueLeaf(for: "192.0.2.10").certificate
        let v6 = try ca.issueLeaf(for: "2001:db8::10").certificate
        let verifier = try ChainVerifier(trustedCertificates: [ca.certificate])
        #expect(try verifier.verify(chain: [v4], host: "192.0.2.10").count == 2)
        #expect(try verifier.verify(chain: [v6], host: "[2001:db8:0::10]").count == 2)
        let error = #expect(throws: CertificateVerificationError.self) {
            try verifier.verify(chain: [v4], host: "192.0.2.11")
        }
        #expect(error?.code == .ipAddressMismatch)
        // A DNS-name check never matches an IP SAN.
        #expect(throws: CertificateVerificationError.self) { try verifier.verify(chain: [v4], host: "example.com") }
    }

    @Test("a client certificate fails as a server certificate and passes as a client one")
    func purpose() throws {
        let ca = try CertificateAuthority.create(commonName: "Purpose CA")
        let client = try ca.issueLeaf(for: "agent", usage: .clientAuth).certificate
        let verifier = try ChainVerifier(trustedCertificates: [ca.certificate])
        let error = #expect(throws: CertificateVerificationError.self) {
            try verifier.verify(chain: [client], host: nil)
        }
        #expect(error?.code == .invalidPurpose)
        #expect(try verifier.verify(chain: [client], host: nil, purpose: .clientAuth).count == 2)
    }

    @Test("the system roots are loaded: a system root is found as trusted, not as an unknown self-signed leaf")
    func systemRoots() throws {
        let roots = try Certificate.bundle(pemFile: "/etc/ssl/certs/ca-certificates.crt")
        let root = try #require(roots.first { $0.subject.contains("CN=ISRG Root X1") })
        let when = root.notBefore.addingTimeInterval(day)
        let empty = #expect(throws: CertificateVerificationError.self) {
            try ChainVerifier().verify(chain: [root], host: nil, at: when)
        }
        #expect(empty?.code == .selfSignedLeaf)
        // Found in the store, the root passes the trust check and fails only as a TLS leaf: its keyUsage
        // is keyCertSign and cRLSign.
        let system = #expect(throws: CertificateVerificationError.self) {
            try ChainVerifier(systemRoots: true).verify(chain: [root], host: nil, at: when)
        }
        #expect(system?.code == .invalidPurpose)
    }

    @Test("an empty chain is an invalid argument")
    func emptyChain() throws {
        let verifier = try ChainVerifier()
        #expect(throws: OpenSSLError.invalidArgument) { try verifier.verify(chain: [], host: nil) }
    }

    @Test("verifiers are safe to share across concurrent tasks")
    func concurrentVerification() async throws {
        let ca = try CertificateAuthority.create(commonName: "Shared CA")
        let identity = try ca.issueLeaf(for: "shared.example")
        let verifier = try ChainVerifier(trustedCertificates: [ca.certificate])
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<16 {
                group.addTask { try verifier.verify(chain: identity.certificateChain, host: "shared.example").count }
            }
            for try await count in group { #expect(count == 2) }
        }
    }
}
