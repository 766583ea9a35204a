import Foundation
import Testing
import TollgatePolicy
import TollgateTLS
import TollgateTesting

/// A directory with a CA, two leaves and their files (keys mode 0600), and a way to write a
/// configuration with a TLS listener there.
private struct TLSFiles {
    let directory: String
    let pki: TestPKI

    init() throws {
        directory = try Fixture.temporaryDirectory()
        pki = try TestPKI(commonName: "Listener CA", host: "127.0.0.1")
        try pki.server.certificate.pemString.write(toFile: directory + "/srv.pem", atomically: true, encoding: .utf8)
        try pki.server.privateKey.write(toPEMFile: directory + "/srv.key")
        let other = try pki.authority.issueLeaf(for: "a.test")
        try other.certificate.pemString.write(toFile: directory + "/a.pem", atomically: true, encoding: .utf8)
        try other.privateKey.write(toPEMFile: directory + "/a.key")
    }

    /// The problems of `tlsLines` (YAML under `tls:` of a forward listener), as check-config prints them.
    func problems(_ tlsLines: String) -> [String] {
        let yaml = """
            listen:
              - address: "127.0.0.1:0"
                tls:
            \(tlsLines.split(separator: "\n").map { "      " + $0 }.joined(separator: "\n"))
            """
        return Fixture.problems(yaml, checkFiles: true, base: directory)
    }

    func remove() { try? FileManager.default.removeItem(atPath: directory) }
}

@Suite("Loading a listener's tls")
struct ListenerTLSLoadingTests {
    @Test("certificate and key load into one certificate; min-version defaults to 1.2 and reads 1.3")
    func singleCertificate() throws {
        let files = try TLSFiles()
        defer { files.remove() }
        let configuration = try PolicyLoader(checkFiles: true).load(
            yaml: """
                listen:
                  - address: "127.0.0.1:0"
                    tls: { certificate: "srv.pem", key: "srv.key" }
                  - address: "127.0.0.1:1"
                    mode: reverse
                    upstream: "http://127.0.0.1:9"
                    tls: { certificates: [{ certificate: srv.pem, key: srv.key }, { certificate: a.pem, key: a.key }], min-version: "1.3" }
                """,
            file: "t.yaml",
            baseDirectory: files.directory
        )
        let first = try #require(configuration.listeners[0].tls)
        #expect(first.certificates == [.init(certificate: files.directory + "/srv.pem", key: files.directory + "/srv.key")])
        #expect(first.minimumVersion == .tls1_2)
        let second = try #require(configuration.listeners[1].tls)
        #expect(second.certificates.map(\.certificate) == [files.directory + "/srv.pem", files.directory + "/a.pem"])
        #expect(second.minimumVersion == .tls1_3)
        #expect(configuration.listeners[0].tls != nil && configuration.listeners[1].mode == .reverse)
    }

    @Test("session-tickets: on by default, off when asked; off with client-auth, where turning it on is a problem")
    func sessionTickets() throws {
        let files = try TLSFiles()
        defer { files.remove() }
        try files.pki.authority.certificate.pemString.write(toFile: files.directory + "/ca.pem", atomically: true, encoding: .utf8)
        let configuration = try PolicyLoader(checkFiles: true).load(
            yaml: """
                listen:
                  - address: "127.0.0.1:0"
                    tls: { certificate: srv.pem, key: srv.key }
                  - address: "127.0.0.1:1"
                    tls: { certificate: srv.pem, key: srv.key, session-tickets: false }
                  - address: "127.0.0.1:2"
                    tls: { certificate: srv.pem, key: srv.key, client-auth: { roots: ca.pem } }
                """,
            file: "t.yaml",
            baseDirectory: files.directory
        )
        #expect(configuration.listeners.map { $0.tls?.sessionTickets } == [true, false, false])
        let problems = files.problems("certificate: srv.pem\nkey: srv.key\nclient-auth: { roots: ca.pem }\nsession-tickets: true")
        #expect(
            problems.contains { $0.hasPrefix("t.yaml:7: listen[0].tls.session-tickets:") && $0.contains("a resumed session would skip") },
            "\(problems)"
        )
    }

    @Test("session-ticket-keys: a file or a list, in order; a key readable by others, of the wrong size, or with tickets off is a problem at its line")
    func sessionTicketKeys() throws {
        let files = try TLSFiles()
        defer { files.remove() }
        for (name, size, mode) in [("a.tk", 80, 0o600), ("b.tk", 48, 0o600), ("open.tk", 80, 0o644), ("short.tk", 32, 0o600)] {
            #expect(FileManager.default.createFile(atPath: files.directory + "/" + name, contents: Data(repeating: 7, count: size)))
            #expect(chmod(files.directory + "/" + name, mode_t(mode)) == 0)
        }
        let configuration = try PolicyLoader(checkFiles: true).load(
            yaml: """
                listen:
                  - address: "127.0.0.1:0"
                    tls: { certificate: srv.pem, key: srv.key, session-ticket-keys: a.tk }
                  - address: "127.0.0.1:1"
                    tls: { certificate: srv.pem, key: srv.key, session-ticket-keys: [b.tk, a.tk] }
                  - address: "127.0.0.1:2"
                    tls: { certificate: srv.pem, key: srv.key }
                """,
            file: "t.yaml",
            baseDirectory: files.directory
        )
        #expect(
            configuration.listeners.map { $0.tls?.sessionTicketKeyFiles ?? [] }
                == [[files.directory + "/a.tk"], [files.directory + "/b.tk", files.directory + "/a.tk"], []]
        )
        let open = files.directory + "/open.tk"
        #expect(
            files.problems("certificate: srv.pem\nkey: srv.key\nsession-ticket-keys: [a.tk, open.tk]")
                == ["t.yaml:6: listen[0].tls.session-ticket-keys[1]: \"\(open)\" is readable by others (mode 644): chmod 600 \(open)"]
        )
        let short = files.problems("certificate: srv.pem\nkey: srv.key\nsession-ticket-keys: short.tk")
        #expect(short.count == 1 && short[0].hasPrefix("t.yaml:6: listen[0].tls.session-ticket-keys:") && short[0].contains("80 bytes"), "\(short)")
        let off = files.problems("certificate: srv.pem\nkey: srv.key\nsession-tickets: false\nsession-ticket-keys: a.tk")
        #expect(off.count == 1 && off[0].hasPrefix("t.yaml:7: listen[0].tls.session-ticket-keys:") && off[0].contains("session tickets are off"), "\(off)")
    }

    @Test("ocsp-response: read with its certificate, in a certificates entry too; one about another certificate, or not a response, is a problem at its line")
    func ocspResponse() async throws {
        let files = try TLSFiles()
        defer { files.remove() }
        let other = try files.pki.authority.issueLeaf(for: "other.test")
        #expect(FileManager.default.createFile(atPath: files.directory + "/srv.ocsp", contents: Data(try await files.pki.ocspResponse(for: files.pki.server))))
        #expect(FileManager.default.createFile(atPath: files.directory + "/other.ocsp", contents: Data(try await files.pki.ocspResponse(for: other))))
        #expect(FileManager.default.createFile(atPath: files.directory + "/junk.ocsp", contents: Data("junk".utf8)))
        let configuration = try PolicyLoader(checkFiles: true).load(
            yaml: """
                listen:
                  - address: "127.0.0.1:0"
                    tls: { certificate: srv.pem, key: srv.key, ocsp-response: srv.ocsp }
                  - address: "127.0.0.1:1"
                    tls:
                      certificates:
                        - { certificate: a.pem, key: a.key }
                        - { certificate: srv.pem, key: srv.key, ocsp-response: srv.ocsp }
                """,
            file: "t.yaml",
            baseDirectory: files.directory
        )
        #expect(configuration.listeners[0].tls?.certificates.map(\.ocspResponse) == [files.directory + "/srv.ocsp"])
        #expect(configuration.listeners[1].tls?.certificates.map(\.ocspResponse) == [nil, files.directory + "/srv.ocsp"])
        let identity = try configuration.listeners[0].tls!.certificates[0].load().get()
        #expect(identity.ocspResponse?.status == .good)
        let elsewhere = files.problems("certificate: srv.pem\nkey: srv.key\nocsp-response: other.ocsp")
        #expect(elsewhere.count == 1 && elsewhere[0].hasPrefix("t.yaml:6: listen[0].tls.ocsp-response:") && elsewhere[0].contains("about another certificate"), "\(elsewhere)")
        let junk = files.problems("certificate: srv.pem\nkey: srv.key\nocsp-response: junk.ocsp")
        #expect(junk.count == 1 && junk[0].contains("not a DER OCSP response"), "\(junk)")
        let misplaced = files.problems("certificates: [{ certificate: srv.pem, key: srv.key }]\nocsp-response: srv.ocsp")
        #expect(misplaced.count == 1 && misplaced[0].contains("in its entry"), "\(misplaced)")
    }

    @Test("ocsp-stapling: each certificate without an ocsp-response must name a responder and hold its issuer; a problem at its line otherwise")
    func ocspStapling() async throws {
        let files = try TLSFiles()
        defer { files.remove() }
        let intermediate = try files.pki.authority.issueIntermediate(commonName: "Loader Intermediate")
        let named = try intermediate.issueLeaf(for: "127.0.0.1", ocspResponder: "http://ocsp.example/")
        try named.certificateChain.map(\.pemString).joined().write(toFile: files.directory + "/chain.pem", atomically: true, encoding: .utf8)
        try named.certificate.pemString.write(toFile: files.directory + "/alone.pem", atomically: true, encoding: .utf8)
        try named.privateKey.write(toPEMFile: files.directory + "/named.key")
        #expect(FileManager.default.createFile(atPath: files.directory + "/srv.ocsp", contents: Data(try await files.pki.ocspResponse(for: files.pki.server))))
        let configuration = try PolicyLoader(checkFiles: true).load(
            yaml: """
                listen:
                  - address: "127.0.0.1:0"
                    tls:
                      ocsp-stapling: true
                      certificates:
                        - { certificate: chain.pem, key: named.key }
                        - { certificate: srv.pem, key: srv.key, ocsp-response: srv.ocsp }
                """,
            file: "t.yaml",
            baseDirectory: files.directory
        )
        #expect(configuration.listeners[0].tls?.ocspStapling == true)
        let noResponder = files.problems("certificate: srv.pem\nkey: srv.key\nocsp-stapling: true")
        #expect(noResponder.count == 1 && noResponder[0].hasPrefix("t.yaml:6: listen[0].tls.ocsp-stapling:") && noResponder[0].contains("names no OCSP responder"), "\(noResponder)")
        let noIssuer = files.problems("certificate: alone.pem\nkey: named.key\nocsp-stapling: true")
        #expect(noIssuer.count == 1 && noIssuer[0].contains("holds no issuer"), "\(noIssuer)")
        // A must-staple certificate needs a staple: a file, or fetching.
        let bound = try intermediate.issueLeaf(for: "127.0.0.1", ocspResponder: "http://ocsp.example/", mustStaple: true)
        try bound.certificateChain.map(\.pemString).joined().write(toFile: files.directory + "/bound.pem", atomically: true, encoding: .utf8)
        try bound.privateKey.write(toPEMFile: files.directory + "/bound.key")
        let unstapled = files.problems("certificate: bound.pem\nkey: bound.key")
        #expect(unstapled.count == 1 && unstapled[0].hasPrefix("t.yaml:4: listen[0].tls:") && unstapled[0].contains("must-staple"), "\(unstapled)")
        #expect(files.problems("certificate: bound.pem\nkey: bound.key\nocsp-stapling: true").isEmpty)
    }

    @Test("A missing key file is FILE:LINE: KEY: cannot read")
    func missingKey() throws {
        let files = try TLSFiles()
        defer { files.remove() }
        #expect(
            files.problems("certificate: srv.pem\nkey: gone.key")
                == ["t.yaml:5: listen[0].tls.key: cannot read \"gone.key\" (\(files.directory)/gone.key): no such file"]
        )
    }

    @Test("A key readable by others (0644) is refused with the chmod that fixes it")
    func keyReadableByOthers() throws {
        let files = try TLSFiles()
        defer { files.remove() }
        #expect(chmod(files.directory + "/srv.key", 0o644) == 0)
        let path = files.directory + "/srv.key"
        #expect(
            files.problems("certificate: srv.pem\nkey: srv.key")
                == ["t.yaml:5: listen[0].tls.key: \"\(path)\" is readable by others (mode 644): chmod 600 \(path)"]
        )
    }

    @Test("A key that belongs to another certificate is refused at the key, in a certificates list too")
    func mismatchedKey() throws {
        let files = try TLSFiles()
        defer { files.remove() }
        let message = "the key \(files.directory)/a.key does not belong to the certificate \(files.directory)/srv.pem"
        #expect(files.problems("certificate: srv.pem\nkey: a.key") == ["t.yaml:5: listen[0].tls.key: \(message)"])
        #expect(
            files.problems("certificates:\n  - { certificate: a.pem, key: a.key }\n  - { certificate: srv.pem, key: a.key }")
                == ["t.yaml:6: listen[0].tls.certificates[1].key: \(message)"]
        )
    }

    @Test("A certificate file without a PEM certificate, and a key file without a key, name the file")
    func unreadableContents() throws {
        let files = try TLSFiles()
        defer { files.remove() }
        try "not a certificate\n".write(toFile: files.directory + "/junk.pem", atomically: true, encoding: .utf8)
        let problems = files.problems("certificate: junk.pem\nkey: srv.key")
        #expect(problems.count == 1)
        #expect(problems.first?.hasPrefix("t.yaml:4: listen[0].tls.certificate: ") == true, "\(problems)")
        // The certificate's bytes are no key: a file the owner alone reads, but no key in it.
        try "not a key\n".write(toFile: files.directory + "/junk.key", atomically: true, encoding: .utf8)
        #expect(chmod(files.directory + "/junk.key", 0o600) == 0)
        let keyProblems = files.problems("certificate: srv.pem\nkey: junk.key")
        #expect(keyProblems.count == 1)
        #expect(keyProblems.first?.hasPrefix("t.yaml:5: listen[0].tls.key: cannot load the key ") == true, "\(keyProblems)")
    }

    @Test("A bad min-version, both forms at once, no certificate and unknown keys are each reported")
    func badShapes() throws {
        let files = try TLSFiles()
        defer { files.remove() }
        let version = files.problems("certificate: srv.pem\nkey: srv.key\nmin-version: \"1.1\"")
        #expect(version.count == 1)
        #expect(version.first?.hasPrefix("t.yaml:6: listen[0].tls.min-version: ") == true, "\(version)")
        #expect(version.first?.contains("1.3") == true)
        #expect(
            files.problems("certificate: srv.pem\nkey: srv.key\ncertificates: []")
                == ["t.yaml:6: listen[0].tls.certificates: give either certificate and key, or certificates, not both"]
        )
        #expect(
            files.problems("min-version: \"1.3\"")
                == ["t.yaml:4: listen[0].tls: missing key \"certificate\" (with \"key\") or \"certificates\""]
        )
        #expect(
            files.problems("certificate: srv.pem")
                == ["t.yaml:4: listen[0].tls: missing key \"key\""]
        )
        let unknown = files.problems("certificate: srv.pem\nkey: srv.key\ncert-chain: x")
        #expect(unknown.first?.hasPrefix("t.yaml:6: listen[0].tls.cert-chain: unknown key") == true, "\(unknown)")
    }
}
