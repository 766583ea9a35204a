import Foundation
import Testing
import TollgateTLS

import enum TollgateTesting.TestOCSPResponder
import class TollgateTesting.ChildProcess

/// OCSP responses (``OCSPResponse``) read from what `openssl ocsp` answers as a CA's responder,
/// and stapled by a server to the handshakes of clients that ask (`openssl s_client -status`).
@Suite("OCSP responses and stapling (openssl ocsp, s_client -status)", .timeLimit(.minutes(1)))
struct OCSPStaplingTests {
    @Test("A responder's answer reads as good, revoked or unknown for the certificate it is about, with its update times; another certificate's, or bytes that are not one, are refused")
    func parsing() async throws {
        let ca = try CertificateAuthority.create(commonName: "OCSP Test CA")
        let leaf = try ca.issueLeaf(for: "localhost")
        let other = try ca.issueLeaf(for: "other.test")
        let withIssuer = [leaf.certificate, ca.certificate]
        let good = try OCSPResponse(der: try await TestOCSPResponder.response(by: ca, for: leaf), for: withIssuer)
        #expect(good.status == .good)
        let nextUpdate = try #require(good.nextUpdate)
        #expect(abs(nextUpdate.timeIntervalSinceNow - 86_400) < 120 && abs(good.thisUpdate.timeIntervalSinceNow) < 120)
        #expect(good.isCurrent() && !good.isCurrent(at: Date().addingTimeInterval(2 * 86_400)))
        let revoked = try await TestOCSPResponder.response(by: ca, for: leaf, status: .revoked)
        #expect(try OCSPResponse(der: revoked, for: withIssuer).status == .revoked)
        #expect(try OCSPResponse(der: revoked, for: [leaf.certificate]).status == .revoked, "without the issuer: matched by serial")
        let unknown = try await TestOCSPResponder.response(by: ca, for: leaf, status: .unknown)
        #expect(try OCSPResponse(der: unknown, for: withIssuer).status == .unknown)
        let elsewhere = try await TestOCSPResponder.response(by: ca, for: other)
        #expect(throws: OCSPResponse.ParseError.self) { try OCSPResponse(der: elsewhere, for: withIssuer) }
        #expect(throws: OCSPResponse.ParseError.self) { try OCSPResponse(der: elsewhere, for: [leaf.certificate]) }
        do {
            _ = try OCSPResponse(der: Array("not DER".utf8), for: withIssuer)
            Issue.record("garbage was read as a response")
        } catch let error as OCSPResponse.ParseError {
            #expect(error.description == "not a DER OCSP response")
        }
    }

    @Test("A server staples its identity's response, and the one SNI chose for its name; none without one, and none to a client that does not ask")
    func stapling() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        var identity = try pki.ca.issueLeaf(for: "localhost")
        let response = try await TestOCSPResponder.response(by: pki.ca, for: identity)
        identity.ocspResponse = try OCSPResponse(der: response, for: [identity.certificate, pki.ca.certificate])
        var named = try pki.ca.issueLeaf(for: "named.test")
        named.ocspResponse = try OCSPResponse(
            der: try await TestOCSPResponder.response(by: pki.ca, for: named, status: .revoked), for: [named.certificate, pki.ca.certificate]
        )
        let stapling = try await LoopbackTLSServer.start(
            context: try TLSContext(configuration: .makeServerConfiguration(identity: identity)), behaviour: .init(closeAfterFirstReply: true)
        )
        let plain = try await LoopbackTLSServer.start(context: try pki.serverContext(), behaviour: .init(closeAfterFirstReply: true))
        var byName = TLSConfiguration.makeServerConfiguration(identity: identity)
        byName.serverNameHandler = { [named] name in name == "named.test" ? named : nil }
        let sni = try await LoopbackTLSServer.start(context: try TLSContext(configuration: byName), behaviour: .init(closeAfterFirstReply: true))

        func handshake(_ port: Int, name: String = "localhost", status: Bool = true) async throws -> String {
            let client = try OpenSSLProcess(
                ["s_client", "-connect", "127.0.0.1:\(port)", "-servername", name, "-CAfile", pki.caFile.path, "-ign_eof"] + (status ? ["-status"] : []),
                in: pki.directory
            )
            defer { client.stop() }
            client.send("ping\n")
            try await client.waitForExit()
            return client.output
        }
        let stapled = try await handshake(stapling.port)
        #expect(stapled.contains("OCSP Response Status: successful") && stapled.contains("Cert Status: good"), "\(stapled)")
        #expect(stapled.contains("Serial Number: \(identity.certificate.serialNumber)"), "\(stapled)")
        let notAsked = try await handshake(stapling.port, status: false)
        #expect(!notAsked.contains("OCSP"), "\(notAsked)")
        let none = try await handshake(plain.port)
        #expect(none.contains("OCSP response: no response sent"), "\(none)")
        let chosen = try await handshake(sni.port, name: "named.test")
        #expect(chosen.contains("Cert Status: revoked") && chosen.contains("Serial Number: \(named.certificate.serialNumber)"), "\(chosen)")
        let fallback = try await handshake(sni.port, name: "elsewhere.test")
        #expect(fallback.contains("Cert Status: good"), "\(fallback)")
        for server in [stapling, plain, sni] { await server.stop() }
    }

    @Test("What fetching needs: the responder a certificate names, a request openssl reads as about its serial, the issuer's signature checked (another CA's refused)")
    func fetchingParts() async throws {
        let root = try CertificateAuthority.create(commonName: "OCSP Root")
        let intermediate = try root.issueIntermediate(commonName: "OCSP Intermediate")
        let leaf = try intermediate.issueLeaf(for: "localhost", ocspResponder: "http://127.0.0.1:8888/ocsp")
        #expect(OCSPResponse.responderURLs(of: leaf.certificate) == ["http://127.0.0.1:8888/ocsp"])
        #expect(OCSPResponse.responderURLs(of: intermediate.certificate).isEmpty)
        let stapleBound = try intermediate.issueLeaf(for: "localhost", mustStaple: true)
        #expect(stapleBound.certificate.mustStaple && !leaf.certificate.mustStaple)
        let pemFile = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-must-staple-\(UUID().uuidString).pem")
        defer { try? FileManager.default.removeItem(at: pemFile) }
        try stapleBound.certificate.pemString.write(to: pemFile, atomically: true, encoding: .utf8)
        let text = try await ChildProcess.run("/usr/bin/openssl", ["x509", "-in", pemFile.path, "-noout", "-text"])
        #expect(text.stdout.contains("TLS Feature") && text.stdout.contains("status_request"), "openssl reads the extension: \(text.stdout)")
        #expect(throws: OCSPResponse.ParseError.self) { try OCSPResponse.request(for: [leaf.certificate]) }

        let request = try OCSPResponse.request(for: leaf.certificateChain)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-ocsp-request-\(UUID().uuidString).der")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(request).write(to: file)
        let read = try await ChildProcess.run("/usr/bin/openssl", ["ocsp", "-reqin", file.path, "-req_text", "-noverify"])
        #expect(read.status == 0 && read.stdout.contains("Serial Number: \(leaf.certificate.serialNumber)"), "\(read.stdout) \(read.stderr)")

        let signed = try await TestOCSPResponder.response(by: intermediate, for: leaf)
        #expect(try OCSPResponse(verifying: signed, for: leaf.certificateChain).status == .good)
        #expect(throws: OCSPResponse.ParseError.self, "no issuer to check it with") { try OCSPResponse(verifying: signed, for: [leaf.certificate]) }
        let stranger = try CertificateAuthority.create(commonName: "Another CA")
        let forged = try await TestOCSPResponder.response(by: intermediate, for: leaf, signedBy: stranger)
        #expect(try OCSPResponse(der: forged, for: leaf.certificateChain).status == .good, "read, unverified")
        #expect(throws: OCSPResponse.ParseError.self) { try OCSPResponse(verifying: forged, for: leaf.certificateChain) }
    }
}

