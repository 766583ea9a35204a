import Foundation
import Testing
import TollgateTLS

@Suite("Certificate")
struct CertificateTests {
    @Test("a certificate survives a PEM round trip unchanged")
    func pemRoundTrip() throws {
        let ca = try CertificateAuthority.create(commonName: "Round Trip CA")
        let pem = ca.certificate.pemString
        #expect(pem.hasPrefix("-----BEGIN CERTIFICATE-----\n"))
        #expect(pem.hasSuffix("-----END CERTIFICATE-----\n"))
        let parsed = try Certificate(pem: pem)
        #expect(parsed == ca.certificate)
        #expect(parsed.derBytes == ca.certificate.derBytes)
        #expect(parsed.pemString == pem)
    }

    @Test("a certificate survives a DER round trip unchanged")
    func derRoundTrip() throws {
        let ca = try CertificateAuthority.create(commonName: "DER CA")
        let parsed = try Certificate(der: ca.certificate.derBytes)
        #expect(parsed == ca.certificate)
        #expect(parsed.subject == "CN=DER CA")
    }

    @Test("DER with trailing bytes is rejected")
    func derWithTrailingBytes() throws {
        let ca = try CertificateAuthority.create(commonName: "DER CA")
        #expect(throws: OpenSSLError.invalidDER) { try Certificate(der: ca.certificate.derBytes + [0]) }
        #expect(throws: OpenSSLError.invalidDER) { try Certificate(der: [0x30, 0x03, 0x02, 0x01]) }
    }

    @Test("our PEM is byte-for-byte what openssl x509 writes")
    func pemMatchesOpenSSLCLI() throws {
        let ca = try CertificateAuthority.create(commonName: "CLI CA")
        try withTemporaryDirectory { directory in
            try ca.certificate.pemString.write(to: directory.appendingPathComponent("ca.pem"))
            let result = try shell("openssl x509 -in ca.pem", in: directory)
            #expect(result.status == 0)
            #expect(result.output == ca.certificate.pemString)
        }
    }

    @Test("a PEM bundle yields every certificate in order, skipping other blocks")
    func pemBundle() throws {
        let root = try CertificateAuthority.create(commonName: "Bundle Root")
        let intermediate = try root.issueIntermediate(commonName: "Bundle Intermediate")
        let key = try PrivateKey()
        let bundle =
            "leading text\n" + intermediate.certificate.pemString + (try key.pkcs8PEM())
            + root.certificate.pemString
        let certificates = try Certificate.bundle(pem: bundle)
        #expect(certificates == [intermediate.certificate, root.certificate])
    }

    @Test("a PEM bundle with no certificate, or a damaged one, is invalid PEM")
    func invalidBundles() throws {
        #expect(throws: OpenSSLError.invalidPEM) { try Certificate.bundle(pem: "") }
        #expect(throws: OpenSSLError.invalidPEM) { try Certificate(pem: "not a certificate") }
        let good = try CertificateAuthority.create(commonName: "Good").certificate.pemString
        let damaged = good + "-----BEGIN CERTIFICATE-----\nAAAA!!!!\n-----END CERTIFICATE-----\n"
        let error = #expect(throws: OpenSSLError.invalidPEM) { try Certificate.bundle(pem: damaged) }
        #expect(error?.message.contains("certificate #2") == true)
    }

    @Test("an invalid-PEM error carries OpenSSL's reason")
    func errorCarriesOpenSSLQueue() throws {
        let error = #expect(throws: OpenSSLError.invalidPEM) { try Certificate(pem: "garbage") }
        #expect(error?.message.contains("no start line") == true)
    }

    @Test("subject, issuer, serial and dates agree with openssl x509")
    func fieldsMatchOpenSSLCLI() throws {
        let ca = try CertificateAuthority.create(commonName: "Fields CA", validityDays: 10, now: referenceDate)
        let leaf = try ca.issueLeaf(for: "fields.example", validity: 5 * day, now: referenceDate).certificate
        #expect(leaf.subject == "CN=fields.example")
        #expect(leaf.issuer == "CN=Fields CA")
        #expect(leaf.notBefore == referenceDate.addingTimeInterval(-3600))
        #expect(leaf.notAfter == referenceDate.addingTimeInterval(-3600 + 5 * day))
        #expect(leaf.serialNumber.count == 32)
        try withTemporaryDirectory { directory in
            try leaf.pemString.write(to: directory.appendingPathComponent("leaf.pem"))
            let result = try shell(
                "openssl x509 -in leaf.pem -noout -serial -subject -issuer -nameopt RFC2253",
                in: directory
            )
            #expect(result.status == 0)
            #expect(result.output.contains("serial=\(leaf.serialNumber)\n"))
            #expect(result.output.contains("subject=CN=fields.example\n"))
            #expect(result.output.contains("issuer=CN=Fields CA\n"))
        }
    }

    @Test("isCA is true for authorities and false for leaves")
    func isCA() throws {
        let root = try CertificateAuthority.create(commonName: "Root")
        let intermediate = try root.issueIntermediate(commonName: "Intermediate")
        let leaf = try intermediate.issueLeaf(for: "leaf.example").certificate
        #expect(root.certificate.isCA)
        #expect(intermediate.certificate.isCA)
        #expect(!leaf.isCA)
        #expect(root.certificate.isSelfSigned)
        #expect(!intermediate.certificate.isSelfSigned)
        #expect(!leaf.isSelfSigned)
    }

    @Test("subject alternative names list DNS names and IP addresses")
    func subjectAlternativeNames() throws {
        let ca = try CertificateAuthority.create(commonName: "SAN CA")
        #expect(
            try ca.issueLeaf(for: "WWW.Example.COM.").certificate.subjectAlternativeNames == [
                .dnsName("www.example.com")
            ]
        )
        #expect(try ca.issueLeaf(for: "192.0.2.7").certificate.subjectAlternativeNames == [.ipAddress("192.0.2.7")])
        #expect(
            try ca.issueLeaf(for: "[2001:DB8::1]").certificate.subjectAlternativeNames == [.ipAddress("2001:db8::1")]
        )
        #expect(ca.certificate.subjectAlternativeNames.isEmpty)
    }

    @Test("certificates from the system bundle parse")
    func systemBundleParses() throws {
        let path = "/etc/ssl/certs/ca-certificates.crt"
        try #require(FileManager.default.fileExists(atPath: path))
        let roots = try Certificate.bundle(pemFile: path)
        #expect(roots.count > 50)
        #expect(roots.allSatisfy { $0.isCA })
    }

    @Test("a missing PEM file is an I/O error naming the path")
    func missingFile() throws {
        let error = #expect(throws: OpenSSLError.io) { try Certificate.bundle(pemFile: "/nonexistent/ca.pem") }
        #expect(error?.message.contains("/nonexistent/ca.pem") == true)
    }
}
