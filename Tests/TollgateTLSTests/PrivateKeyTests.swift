import Foundation
import Testing
import TollgateTLS

@Suite("PrivateKey")
struct PrivateKeyTests {
    @Test("a generated key is EC P-256 by default and RSA 2048 on request")
    func generation() throws {
        let ec = try PrivateKey()
        #expect(ec.typeName == "EC")
        #expect(ec.bits == 256)
        let rsa = try PrivateKey(generating: .rsa2048)
        #expect(rsa.typeName == "RSA")
        #expect(rsa.bits == 2048)
        #expect(throws: OpenSSLError.invalidArgument) { try PrivateKey(generating: .rsa(bits: 1024)) }
    }

    @Test("a key survives a PKCS#8 PEM round trip", arguments: [PrivateKey.Algorithm.ecP256, .rsa2048])
    func pkcs8RoundTrip(algorithm: PrivateKey.Algorithm) throws {
        let key = try PrivateKey(generating: algorithm)
        let pem = try key.pkcs8PEM()
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----\n"))
        let parsed = try PrivateKey(pem: pem)
        #expect(try parsed.publicKeySPKIDER == key.publicKeySPKIDER)
        #expect(try parsed.pkcs8PEM() == pem)
    }

    @Test("traditional EC and RSA PEM keys from the openssl command line are read")
    func traditionalPEM() throws {
        try withTemporaryDirectory { directory in
            let ec = try shell("openssl ecparam -name prime256v1 -genkey -noout", in: directory)
            #expect(ec.output.hasPrefix("-----BEGIN EC PRIVATE KEY-----"))
            #expect(try PrivateKey(pem: ec.output).typeName == "EC")
            let rsa = try shell("openssl genrsa -traditional 2048 2>/dev/null", in: directory)
            #expect(rsa.output.hasPrefix("-----BEGIN RSA PRIVATE KEY-----"))
            #expect(try PrivateKey(pem: rsa.output).bits == 2048)
        }
    }

    @Test("an encrypted key is refused without prompting for a passphrase")
    func encryptedKeyRefused() throws {
        try withTemporaryDirectory { directory in
            let result = try shell(
                "openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -aes256 -pass pass:secret-pass",
                in: directory
            )
            #expect(result.output.hasPrefix("-----BEGIN ENCRYPTED PRIVATE KEY-----"))
            let error = #expect(throws: OpenSSLError.invalidPEM) { try PrivateKey(pem: result.output) }
            #expect(error?.message.contains("is encrypted") == true)
            #expect(error?.message.contains("secret-pass") == false)
        }
    }

    @Test("garbage is not a key")
    func garbage() throws {
        #expect(throws: OpenSSLError.invalidPEM) { try PrivateKey(pem: "-----BEGIN PRIVATE KEY-----\n") }
        let certificate = try CertificateAuthority.create(commonName: "CA").certificate.pemString
        #expect(throws: OpenSSLError.invalidPEM) { try PrivateKey(pem: certificate) }
    }

    @Test("a written key file has mode 0600 and reads back as the same key")
    func keyFileMode() throws {
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("key.pem").path
            let key = try PrivateKey()
            // A permissive umask must not make the key readable by others.
            let previous = umask(0)
            defer { umask(previous) }
            try key.write(toPEMFile: path)
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
            #expect(try PrivateKey(pemFile: path).publicKeySPKIDER == (try key.publicKeySPKIDER))
            let check = try shell("openssl pkey -in '\(path)' -noout -check")
            #expect(check.status == 0, "\(check.error)")
        }
    }

    @Test("writing a key refuses to replace an existing file unless told to, and stays 0600")
    func keyFileOverwrite() throws {
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("key.pem").path
            try "old".write(to: URL(fileURLWithPath: path))
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
            let key = try PrivateKey()
            let error = #expect(throws: OpenSSLError.io) { try key.write(toPEMFile: path) }
            #expect(error?.message.contains("already exists") == true)
            try key.write(toPEMFile: path, overwrite: true)
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
            #expect(try PrivateKey(pemFile: path).publicKeySPKIDER == (try key.publicKeySPKIDER))
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["key.pem"])
        }
    }

    @Test("a key's description shows its type and size only")
    func descriptionHasNoSecret() throws {
        let key = try PrivateKey()
        #expect(key.description == "PrivateKey(EC 256)")
    }
}
