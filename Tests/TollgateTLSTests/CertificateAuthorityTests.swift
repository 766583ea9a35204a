import Foundation
import Testing
import TollgateTLS

@Suite("CertificateAuthority")
struct CertificateAuthorityTests {
    @Test("a new CA has critical CA:TRUE, keyCertSign and cRLSign, and a subject key identifier")
    func caExtensions() throws {
        let ca = try CertificateAuthority.create(commonName: "Tollgate Test CA", validityDays: 365, now: referenceDate)
        #expect(ca.certificate.subject == "CN=Tollgate Test CA")
        #expect(ca.certificate.issuer == "CN=Tollgate Test CA")
        #expect(ca.certificate.notAfter.timeIntervalSince(ca.certificate.notBefore) == 365 * day)
        #expect(ca.intermediates.isEmpty)
        try withTemporaryDirectory { directory in
            try ca.certificate.pemString.write(to: directory.appendingPathComponent("ca.pem"))
            let text = try shell("openssl x509 -in ca.pem -noout -text", in: directory).output
            #expect(text.contains("X509v3 Basic Constraints: critical\n                CA:TRUE\n"))
            #expect(text.contains("X509v3 Key Usage: critical\n                Certificate Sign, CRL Sign\n"))
            #expect(text.contains("X509v3 Subject Key Identifier:"))
            #expect(text.contains("Version: 3 (0x2)"))
            #expect(text.contains("Signature Algorithm: ecdsa-with-SHA256"))
        }
    }

    @Test("a leaf has the host as SAN and CN, serverAuth, an authority key identifier and a 16-byte serial")
    func leafExtensions() throws {
        let ca = try CertificateAuthority.create(commonName: "Leaf CA")
        let identity = try ca.issueLeaf(for: "shop.example.com")
        let leaf = identity.certificate
        #expect(identity.certificateChain == [leaf])
        #expect(leaf.subject == "CN=shop.example.com")
        #expect(leaf.issuer == "CN=Leaf CA")
        #expect(leaf.serialNumber.count == 32)
        #expect(try identity.privateKey.spkiPin == leaf.spkiPin)
        try withTemporaryDirectory { directory in
            try leaf.pemString.write(to: directory.appendingPathComponent("leaf.pem"))
            let text = try shell("openssl x509 -in leaf.pem -noout -text", in: directory).output
            #expect(text.contains("X509v3 Subject Alternative Name: \n                DNS:shop.example.com\n"))
            #expect(text.contains("X509v3 Extended Key Usage: \n                TLS Web Server Authentication\n"))
            #expect(text.contains("X509v3 Basic Constraints: critical\n                CA:FALSE\n"))
            #expect(text.contains("X509v3 Authority Key Identifier:"))
            #expect(text.contains("Signature Algorithm: ecdsa-with-SHA256"))
        }
    }

    @Test("two leaves for the same host get different serial numbers")
    func serialsDiffer() throws {
        let ca = try CertificateAuthority.create(commonName: "Serial CA")
        let first = try ca.issueLeaf(for: "a.example").certificate
        let second = try ca.issueLeaf(for: "a.example").certificate
        #expect(first.serialNumber != second.serialNumber)
    }

    @Test("a leaf for an IP address carries an IP SAN")
    func ipLeaf() throws {
        let ca = try CertificateAuthority.create(commonName: "IP CA")
        let v4 = try ca.issueLeaf(for: "127.0.0.1").certificate
        #expect(v4.subjectAlternativeNames == [.ipAddress("127.0.0.1")])
        #expect(v4.subject == "CN=127.0.0.1")
        let v6 = try ca.issueLeaf(for: "::1").certificate
        #expect(v6.subjectAlternativeNames == [.ipAddress("::1")])
        try withTemporaryDirectory { directory in
            try v4.pemString.write(to: directory.appendingPathComponent("leaf.pem"))
            let text = try shell("openssl x509 -in leaf.pem -noout -ext subjectAltName", in: directory).output
            #expect(text.contains("IP Address:127.0.0.1"))
        }
    }

    @Test("a client certificate carries clientAuth")
    func clientCertificate() throws {
        let ca = try CertificateAuthority.create(commonName: "Client CA")
        let leaf = try ca.issueLeaf(for: "build-agent", usage: [.clientAuth]).certificate
        try withTemporaryDirectory { directory in
            try leaf.pemString.write(to: directory.appendingPathComponent("leaf.pem"))
            let text = try shell("openssl x509 -in leaf.pem -noout -ext extendedKeyUsage", in: directory).output
            #expect(text.contains("TLS Web Client Authentication"))
            #expect(!text.contains("TLS Web Server Authentication"))
        }
    }

    @Test("a host name longer than a CN can hold is carried by a critical SAN alone")
    func longHostName() throws {
        let ca = try CertificateAuthority.create(commonName: "Long CA")
        let host = String(repeating: "a", count: 60) + "." + String(repeating: "b", count: 60) + ".example"
        let leaf = try ca.issueLeaf(for: host).certificate
        #expect(leaf.subject == "")
        #expect(leaf.subjectAlternativeNames == [.dnsName(host)])
        let verified = try ChainVerifier(trustedCertificates: [ca.certificate]).verify(chain: [leaf], host: host)
        #expect(verified.count == 2)
    }

    @Test("hosts that cannot go into a certificate are rejected with the reason")
    func badHosts() throws {
        let ca = try CertificateAuthority.create(commonName: "Host CA")
        for host in ["", "a,b.example", "exa mple.com", "bücher.example", "a..b", "*.com", "x\ny.example"] {
            let error = #expect(throws: OpenSSLError.invalidArgument, "\(host)") { try ca.issueLeaf(for: host) }
            #expect(error?.message.hasPrefix("cannot issue a certificate for") == true)
        }
        #expect(
            try ca.issueLeaf(for: "*.example.com").certificate.subjectAlternativeNames == [.dnsName("*.example.com")]
        )
    }

    @Test("openssl verify accepts a minted leaf against the CA")
    func opensslVerifyAcceptsLeaf() throws {
        let ca = try CertificateAuthority.create(commonName: "Verify CA")
        let leaf = try ca.issueLeaf(for: "verify.example").certificate
        try withTemporaryDirectory { directory in
            try ca.certificate.pemString.write(to: directory.appendingPathComponent("ca.pem"))
            try leaf.pemString.write(to: directory.appendingPathComponent("leaf.pem"))
            let result = try shell(
                "openssl verify -CAfile ca.pem -purpose sslserver -verify_hostname verify.example leaf.pem",
                in: directory
            )
            #expect(result.status == 0, "\(result.error)")
            #expect(result.output == "leaf.pem: OK\n")
        }
    }

    @Test("openssl verify accepts a leaf issued by an intermediate")
    func opensslVerifyAcceptsThreeLevels() throws {
        let root = try CertificateAuthority.create(commonName: "Root CA", key: PrivateKey(generating: .rsa2048))
        let intermediate = try root.issueIntermediate(commonName: "Intermediate CA")
        let identity = try intermediate.issueLeaf(for: "deep.example")
        #expect(identity.certificateChain == [identity.certificate, intermediate.certificate])
        try withTemporaryDirectory { directory in
            try root.certificate.pemString.write(to: directory.appendingPathComponent("root.pem"))
            try intermediate.certificate.pemString.write(to: directory.appendingPathComponent("intermediate.pem"))
            try identity.certificate.pemString.write(to: directory.appendingPathComponent("leaf.pem"))
            let text = try shell("openssl x509 -in intermediate.pem -noout -ext basicConstraints", in: directory)
            #expect(text.output.contains("CA:TRUE, pathlen:0"))
            let result = try shell(
                "openssl verify -CAfile root.pem -untrusted intermediate.pem leaf.pem",
                in: directory
            )
            #expect(result.status == 0, "\(result.error)")
            #expect(result.output == "leaf.pem: OK\n")
        }
    }

    @Test("a CA saved to files loads back and keeps issuing")
    func loadFromFiles() throws {
        let ca = try CertificateAuthority.create(commonName: "Saved CA")
        try withTemporaryDirectory { directory in
            let certificatePath = directory.appendingPathComponent("ca.pem").path
            let keyPath = directory.appendingPathComponent("ca-key.pem").path
            try ca.certificate.pemString.write(to: URL(fileURLWithPath: certificatePath))
            try ca.privateKey.write(toPEMFile: keyPath)
            let loaded = try CertificateAuthority(certificatePEMFile: certificatePath, privateKeyPEMFile: keyPath)
            #expect(loaded.certificate == ca.certificate)
            #expect(loaded.intermediates.isEmpty)
            let leaf = try loaded.issueLeaf(for: "loaded.example").certificate
            #expect(
                try ChainVerifier(trustedCertificates: [ca.certificate]).verify(chain: [leaf], host: "loaded.example")
                    .count == 2
            )
        }
    }

    @Test("an intermediate saved with its chain loads back with that chain")
    func loadIntermediateFromFiles() throws {
        let root = try CertificateAuthority.create(commonName: "Saved Root")
        let intermediate = try root.issueIntermediate(commonName: "Saved Intermediate")
        try withTemporaryDirectory { directory in
            let certificatePath = directory.appendingPathComponent("intermediate.pem").path
            let keyPath = directory.appendingPathComponent("intermediate-key.pem").path
            try intermediate.certificate.pemString.write(to: URL(fileURLWithPath: certificatePath))
            try intermediate.privateKey.write(toPEMFile: keyPath)
            let loaded = try CertificateAuthority(certificatePEMFile: certificatePath, privateKeyPEMFile: keyPath)
            #expect(loaded.intermediates == [intermediate.certificate])
        }
    }

    @Test("a CA is refused when its key does not match or its certificate is not a CA")
    func mismatchedParts() throws {
        let ca = try CertificateAuthority.create(commonName: "Mismatch CA")
        let other = try PrivateKey()
        let error = #expect(throws: OpenSSLError.invalidArgument) {
            try CertificateAuthority(certificate: ca.certificate, privateKey: other)
        }
        #expect(error?.message.contains("does not match") == true)
        let leaf = try ca.issueLeaf(for: "not-a-ca.example")
        let notCA = #expect(throws: OpenSSLError.invalidArgument) {
            try CertificateAuthority(certificate: leaf.certificate, privateKey: leaf.privateKey)
        }
        #expect(notCA?.message.contains("not a CA certificate") == true)
        #expect(throws: OpenSSLError.invalidArgument) {
            try Identity(certificateChain: [leaf.certificate], privateKey: other)
        }
    }

    @Test("a leaf issued with a given key uses that key")
    func leafWithGivenKey() throws {
        let ca = try CertificateAuthority.create(commonName: "Key CA")
        let key = try PrivateKey(generating: .rsa2048)
        let identity = try ca.issueLeaf(for: "rsa.example", key: key)
        #expect(identity.privateKey === key)
        #expect(try identity.certificate.spkiPin == key.spkiPin)
    }
}
