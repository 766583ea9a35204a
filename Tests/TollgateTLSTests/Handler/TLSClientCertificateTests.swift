import Foundation
import NIOCore
import Testing
import TollgateTLS

@Suite("TLSHandler client certificates", .timeLimit(.minutes(2)))
struct TLSClientCertificateTests {
    private func requiringServer(_ pki: TestPKI) async throws -> LoopbackTLSServer {
        try await LoopbackTLSServer.start(
            context: try pki.serverContext {
                $0.clientCertificateRequirement = .required
                $0.trustRoots = .certificates([pki.ca.certificate])
            }
        )
    }

    @Test("a server requiring a client certificate accepts a trusted one and reports its chain")
    func certificateGiven() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let server = try await self.requiringServer(pki)
        let agent = try pki.ca.issueLeaf(for: "agent.example", usage: .clientAuth)
        let log = ConnectionLog()
        let client = try await connectTLSClient(
            port: server.port,
            context: try pki.clientContext { $0.identity = agent },
            serverHostname: "localhost",
            log: log
        )
        try await client.send("with certificate")
        try await waitUntil("the echo arrives") { log.receivedText == "with certificate" }
        #expect(log.handshake?.evaluation.clientCertificateRequested == false)  // it had one to give
        let serverSide = try #require(server.log.handshake?.evaluation)
        #expect(serverSide.trustResult == .trusted)
        #expect(serverSide.presentedChain == [agent.certificate])
        #expect(serverSide.verifiedChain == [agent.certificate, pki.ca.certificate])
        try await client.close()
        await server.stop()
    }

    @Test("without a client certificate the client sees the server's alert and the server fails the handshake")
    func certificateMissing() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let server = try await self.requiringServer(pki)
        let log = ConnectionLog()
        _ = try await connectTLSClient(
            port: server.port,
            context: try pki.clientContext(),
            serverHostname: "localhost",
            log: log
        )
        try await waitUntil("the client is turned away") { log.isInactive }
        try await waitUntil("the server gives up") { server.log.isInactive }
        // TLS 1.3: the client's side of the handshake completes before the server checks its certificate,
        // so the alert arrives afterwards.
        // The server's CertificateRequest was noted: the session raises its challenge on this.
        #expect(log.handshake?.evaluation.clientCertificateRequested == true)
        let error = try #require(log.tlsErrors.first)
        #expect(error == .alertReceived)
        #expect(error.alert == "certificate required")
        #expect(server.log.handshakes.isEmpty)
        let serverError = try #require(server.log.tlsErrors.first)
        #expect(serverError == .handshakeFailed)
        #expect(serverError.message.contains("peer did not return a certificate"))
        await server.stop()
    }

    @Test("a client certificate from an unknown CA is rejected by a strict server")
    func certificateUntrusted() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let server = try await self.requiringServer(pki)
        let stranger = try CertificateAuthority.create(commonName: "Stranger CA")
        let log = ConnectionLog()
        _ = try await connectTLSClient(
            port: server.port,
            context: try pki.clientContext { $0.identity = try? stranger.issueLeaf(for: "agent", usage: .clientAuth) },
            serverHostname: "localhost",
            log: log
        )
        try await waitUntil("the client is turned away") { log.isInactive }
        try await waitUntil("the server gives up") { server.log.isInactive }
        #expect(log.tlsErrors.first == .alertReceived)
        let serverError = try #require(server.log.tlsErrors.first)
        #expect(serverError == .peerUntrusted)
        #expect(serverError.verificationError?.code == .unableToGetLocalIssuerCertificate)
        await server.stop()
    }
}
