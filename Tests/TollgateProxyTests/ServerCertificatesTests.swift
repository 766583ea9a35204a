import Testing
import TollgateTLS
import TollgateTesting

@testable import TollgateProxy

@Suite("Choosing a TLS listener's certificate by SNI")
struct ServerCertificatesTests {
    private static func certificates() throws -> ServerCertificates {
        let authority = try CertificateAuthority.create(commonName: "SNI Test CA")
        return ServerCertificates([
            try authority.issueLeaf(for: "default.test"),
            try authority.issueLeaf(for: "*.b.test"),
            try authority.issueLeaf(for: "a.test"),
            try authority.issueLeaf(for: "x.b.test"),
        ])
    }

    @Test("An exact DNS name wins, in any case and with a trailing dot; a wildcard matches one label only")
    func matching() throws {
        let certificates = try Self.certificates()
        #expect(certificates.index(forServerName: "a.test") == 2)
        #expect(certificates.index(forServerName: "A.Test.") == 2)
        #expect(certificates.index(forServerName: "y.b.test") == 1)
        // The exact name beats the wildcard listed before it.
        #expect(certificates.index(forServerName: "x.b.test") == 3)
        #expect(certificates.index(forServerName: "b.test") == 0)
        #expect(certificates.index(forServerName: "z.y.b.test") == 0)
    }

    @Test("No name, an empty one or an unknown one gets the first certificate, which the handler leaves in place (nil)")
    func defaultCertificate() throws {
        let certificates = try Self.certificates()
        for name in [nil, "", "unknown.test", ".test"] as [String?] {
            #expect(certificates.index(forServerName: name) == 0)
            #expect(certificates.identity(forServerName: name) == nil)
        }
        #expect(certificates.identity(forServerName: "a.test")?.certificate == certificates.identities[2].certificate)
    }
}
