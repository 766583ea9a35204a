import Foundation
import Testing
import TollgateTLS

@Suite("SPKIPin")
struct SPKIPinTests {
    /// The pin as the openssl command line computes it, for a certificate PEM file.
    private func pinFromOpenSSLCLI(certificate: Certificate) throws -> String {
        try withTemporaryDirectory { directory in
            try certificate.pemString.write(to: directory.appendingPathComponent("cert.pem"))
            let result = try shell(
                "openssl x509 -in cert.pem -pubkey -noout | openssl pkey -pubin -outform der"
                    + " | openssl dgst -sha256 -binary | base64",
                in: directory
            )
            #expect(result.status == 0, "\(result.error)")
            return "sha256/" + result.output.trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    @Test("the pin of an EC certificate equals the one the openssl command line computes")
    func ecPinMatchesOpenSSLCLI() throws {
        let leaf = try CertificateAuthority.create(commonName: "Pin CA").issueLeaf(for: "pin.example").certificate
        #expect(leaf.spkiPin.description == (try pinFromOpenSSLCLI(certificate: leaf)))
    }

    @Test("the pin of an RSA certificate equals the one the openssl command line computes")
    func rsaPinMatchesOpenSSLCLI() throws {
        let ca = try CertificateAuthority.create(commonName: "RSA Pin CA", key: PrivateKey(generating: .rsa2048))
        #expect(ca.certificate.spkiPin.description == (try pinFromOpenSSLCLI(certificate: ca.certificate)))
    }

    @Test("the pin of a system root equals the one the openssl command line computes")
    func systemRootPinMatchesOpenSSLCLI() throws {
        let roots = try Certificate.bundle(pemFile: "/etc/ssl/certs/ca-certificates.crt")
        let root = try #require(roots.first)
        #expect(root.spkiPin.description == (try pinFromOpenSSLCLI(certificate: root)))
    }

    @Test("a key's pin equals the pin of a certificate for that key")
    func keyPinEqualsCertificatePin() throws {
        let key = try PrivateKey()
        let leaf = try CertificateAuthority.create(commonName: "CA").issueLeaf(for: "a.example", key: key).certificate
        #expect(try key.spkiPin == leaf.spkiPin)
        #expect(try key.publicKeySPKIDER == leaf.publicKeySPKIDER)
    }

    @Test("a pin parses from its canonical string and prints the same string")
    func parseAndPrint() throws {
        let text = "sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
        let pin = try SPKIPin(text)
        #expect(pin.description == text)
        #expect(pin.sha256Digest == [UInt8](repeating: 0, count: 32))
        #expect(try SPKIPin("  \(text)\n") == pin)
        let certificatePin = try CertificateAuthority.create(commonName: "CA").certificate.spkiPin
        #expect(try SPKIPin(certificatePin.description) == certificatePin)
    }

    @Test("a pin without the sha256/ prefix is rejected with a message naming the prefix")
    func missingPrefix() throws {
        let error = #expect(throws: SPKIPin.ParseError.missingPrefix) {
            try SPKIPin("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
        }
        #expect(error?.message.contains("missing the \"sha256/\" prefix") == true)
        #expect(throws: SPKIPin.ParseError.missingPrefix) {
            try SPKIPin("SHA256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
        }
    }

    @Test("a sha1/ pin is rejected as unsupported, saying so")
    func sha1Rejected() throws {
        let error = #expect(throws: SPKIPin.ParseError.unsupportedAlgorithm) {
            try SPKIPin("sha1/AAAAAAAAAAAAAAAAAAAAAAAAAAA=")
        }
        #expect(error?.message.contains("SHA-1 pins are not supported") == true)
        #expect(throws: SPKIPin.ParseError.unsupportedAlgorithm) { try SPKIPin("md5/AAAA") }
    }

    @Test("a pin whose base64 is invalid is rejected, and base64url gets a hint")
    func badBase64() throws {
        #expect(throws: SPKIPin.ParseError.invalidBase64) { try SPKIPin("sha256/") }
        #expect(throws: SPKIPin.ParseError.invalidBase64) { try SPKIPin("sha256/not base64!") }
        let unpadded = #expect(throws: SPKIPin.ParseError.invalidBase64) {
            try SPKIPin("sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
        }
        #expect(unpadded?.message.contains("padding") == true)
        let error = #expect(throws: SPKIPin.ParseError.invalidBase64) {
            try SPKIPin("sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA_-A=")
        }
        #expect(error?.message.contains("base64url") == true)
    }

    @Test("a pin that does not decode to 32 bytes is rejected with the decoded length")
    func wrongLength() throws {
        let error = #expect(throws: SPKIPin.ParseError.wrongLength) {
            try SPKIPin("sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAA=")
        }
        #expect(error?.message.contains("decodes to 20 bytes") == true)
        #expect(throws: SPKIPin.ParseError.wrongLength) { try SPKIPin(sha256Digest: [1, 2, 3]) }
    }

    @Test("the pin of known bytes is their SHA-256")
    func knownDigest() throws {
        // SHA-256 of the empty input.
        let pin = try SPKIPin(spkiDER: [])
        #expect(pin.description == "sha256/47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=")
    }
}
