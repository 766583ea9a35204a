import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing
import TollgateTLS

@Suite("TLSHandler handshakes", .timeLimit(.minutes(2)))
struct TLSHandshakeTests {
    @Test("a client and a server of ours handshake, report a trusted chain and echo data")
    func clientServerEcho() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let server = try await LoopbackTLSServer.start(context: try pki.serverContext(host: "localhost"))
        let log = ConnectionLog()
        let client = try await connectTLSClient(
            port: server.port,
            context: try pki.clientContext(),
            serverHostname: "localhost",
            log: log
        )
        try await client.send("hello, tls")
        try await waitUntil("the echo arrives") { log.receivedText == "hello, tls" }

        let evaluation = try #require(log.handshake?.evaluation)
        #expect(log.handshake?.awaitsApproval == false)
        #expect(evaluation.trustResult == .trusted)
        #expect(evaluation.protocolVersion == .tlsv1_3)
        #expect(evaluation.applicationProtocol == nil)  // the server offers no ALPN
        #expect(evaluation.cipherSuite.hasPrefix("TLS_"))
        #expect(evaluation.serverName == "localhost")
        let leaf = try #require(evaluation.peerCertificate)
        #expect(leaf.subjectAlternativeNames == [.dnsName("localhost")])
        #expect(evaluation.presentedChain == [leaf])
        #expect(evaluation.verifiedChain == [leaf, pki.ca.certificate])

        let serverSide = try #require(server.log.handshake?.evaluation)
        #expect(serverSide.trustResult == .noCertificate)
        #expect(serverSide.serverName == "localhost")
        #expect(server.log.receivedText == "hello, tls")
        try await client.close()
        #expect(log.tlsErrors.isEmpty)
        await server.stop()
    }

    /// Servers whose certificates fail verification, and the error OpenSSL reports for each.
    enum BadServer: String, CaseIterable, Sendable {
        case wrongHost, expired, selfSigned, unknownCA

        var expectedCode: CertificateVerificationError.Code {
            switch self {
            case .wrongHost: .hostnameMismatch
            case .expired: .certificateHasExpired
            case .selfSigned: .selfSignedLeaf
            case .unknownCA: .unableToGetLocalIssuerCertificate
            }
        }

        /// The server's context and the host name the client asks for.
        func setUp(_ pki: TestPKI) throws -> (server: TLSContext, host: String) {
            switch self {
            case .wrongHost:
                return (try pki.serverContext(host: "right.example"), "wrong.example")
            case .expired:
                let leaf = try pki.ca.issueLeaf(for: "old.example", validity: 86_400, notBeforeOffset: -10 * 86_400)
                return (try TLSContext(configuration: .makeServerConfiguration(identity: leaf)), "old.example")
            case .selfSigned:
                let own = try CertificateAuthority.create(commonName: "self.example")
                let identity = try Identity(certificateChain: [own.certificate], privateKey: own.privateKey)
                return (try TLSContext(configuration: .makeServerConfiguration(identity: identity)), "self.example")
            case .unknownCA:
                let stranger = try CertificateAuthority.create(commonName: "Stranger CA")
                let leaf = try stranger.issueLeaf(for: "internal.example")
                return (try TLSContext(configuration: .makeServerConfiguration(identity: leaf)), "internal.example")
            }
        }
    }

    @Test("a strict client fails the handshake with the verification error", arguments: BadServer.allCases)
    func strictClientRejects(_ bad: BadServer) async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let (serverContext, host) = try bad.setUp(pki)
        let server = try await LoopbackTLSServer.start(context: serverContext)
        let log = ConnectionLog()
        let client = try await connectTLSClient(
            port: server.port,
            context: try pki.clientContext(),
            serverHostname: host,
            log: log
        )
        try await waitUntil("the client gives up") { log.isInactive }

        #expect(log.handshakes.isEmpty)
        let error = try #require(log.tlsErrors.first)
        #expect(error == .peerUntrusted)
        #expect(error.verificationError?.code == bad.expectedCode)
        if bad == .wrongHost { #expect(error.verificationError?.host == "wrong.example") }
        #expect(server.log.received.isEmpty)
        _ = try? await client.closeFuture.get()
        await server.stop()
    }

    @Test(
        "a deferring client completes the handshake, reports untrusted, and moves no data until approved",
        arguments: BadServer.allCases
    )
    func deferringClientHoldsData(_ bad: BadServer) async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let (serverContext, host) = try bad.setUp(pki)
        let server = try await LoopbackTLSServer.start(
            context: serverContext,
            behaviour: .init(echo: false, greeting: Array("welcome".utf8))
        )
        let log = ConnectionLog()
        let client = try await connectTLSClient(
            port: server.port,
            context: try pki.clientContext { $0.deferTrustDecision = true },
            serverHostname: host,
            log: log
        )
        try await waitUntil("the handshake completes") { log.handshake != nil }
        let completed = try #require(log.handshake)
        #expect(completed.awaitsApproval)
        guard case .untrusted(let error) = completed.evaluation.trustResult else {
            Issue.record("expected untrusted, got \(completed.evaluation.trustResult)")
            return
        }
        #expect(error.code == bad.expectedCode)
        #expect(completed.evaluation.verifiedChain.isEmpty)
        #expect(!completed.evaluation.presentedChain.isEmpty)

        // Both directions are held: the server's greeting is not delivered, the client's write not sent
        // (its promise waits too).
        let written = client.eventLoop.makePromise(of: Void.self)
        client.writeAndFlush(ByteBuffer(string: "request"), promise: written)
        let writeDone = NIOLockedValueBox(false)
        written.futureResult.whenComplete { _ in writeDone.withLockedValue { $0 = true } }
        try await waitUntil("the server has greeted") { server.log.handshake != nil }
        try await Task.sleep(for: .milliseconds(300))
        #expect(log.received.count == 0)
        #expect(server.log.received.count == 0)
        #expect(!writeDone.withLockedValue { $0 })

        try await client.approveTLSPeer()
        try await written.futureResult.get()
        try await waitUntil("the greeting arrives") { log.receivedText == "welcome" }
        try await waitUntil("the request arrives") { server.log.receivedText == "request" }
        #expect(log.tlsErrors.isEmpty)
        try await client.close()
        await server.stop()
    }

    @Test("a chain to a private CA passes once the CA file is among the trust roots")
    func caFileInTrustRoots() async throws {
        let pki = try TestPKI(name: "Private CA")
        defer { pki.remove() }
        let server = try await LoopbackTLSServer.start(context: try pki.serverContext(host: "internal.example"))

        let systemOnly = ConnectionLog()
        var configuration = TLSConfiguration.makeClientConfiguration()
        _ = try await connectTLSClient(
            port: server.port,
            context: try TLSContext(configuration: configuration),
            serverHostname: "internal.example",
            log: systemOnly
        )
        try await waitUntil("the system-only client gives up") { systemOnly.isInactive }
        #expect(systemOnly.tlsErrors.first?.verificationError?.code == .unableToGetLocalIssuerCertificate)

        configuration.trustRoots = TrustRoots(includesSystemRoots: true, pemFiles: [pki.caFile.path])
        let withFile = ConnectionLog()
        let client = try await connectTLSClient(
            port: server.port,
            context: try TLSContext(configuration: configuration),
            serverHostname: "internal.example",
            log: withFile
        )
        try await waitUntil("the handshake completes") { withFile.handshake != nil }
        #expect(withFile.handshake?.evaluation.trustResult == .trusted)
        #expect(withFile.handshake?.evaluation.verifiedChain.last == pki.ca.certificate)
        try await client.close()
        await server.stop()
    }

    @Test("SNI reaches the server's handler, which mints a leaf whose SAN matches")
    func serverNameMintsLeaf() async throws {
        let pki = try TestPKI(name: "Interception CA")
        defer { pki.remove() }
        let asked = NIOLockedValueBox<[String?]>([])
        let ca = pki.ca
        var configuration = TLSConfiguration.makeServerConfiguration(identity: nil)
        configuration.serverNameHandler = { name in
            asked.withLockedValue { $0.append(name) }
            return try? ca.issueLeaf(for: name ?? "127.0.0.1")
        }
        let server = try await LoopbackTLSServer.start(context: try TLSContext(configuration: configuration))

        let log = ConnectionLog()
        let client = try await connectTLSClient(
            port: server.port,
            context: try pki.clientContext(),
            serverHostname: "shop.example",
            log: log
        )
        try await waitUntil("the handshake completes") { log.handshake != nil && server.log.handshake != nil }
        #expect(asked.withLockedValue { $0 } == ["shop.example"])
        #expect(server.log.handshake?.evaluation.serverName == "shop.example")
        #expect(log.handshake?.evaluation.trustResult == .trusted)
        #expect(log.handshake?.evaluation.peerCertificate?.subjectAlternativeNames == [.dnsName("shop.example")])
        try await client.close()

        // An IP literal sends no SNI; the handler sees nil and the IP leaf verifies as an address.
        let ipLog = ConnectionLog()
        let ipClient = try await connectTLSClient(
            port: server.port,
            context: try pki.clientContext(),
            serverHostname: "127.0.0.1",
            log: ipLog
        )
        try await waitUntil("the IP handshake completes") { ipLog.handshake != nil }
        #expect(asked.withLockedValue { $0 } == ["shop.example", nil])
        #expect(ipLog.handshake?.evaluation.serverName == nil)
        #expect(ipLog.handshake?.evaluation.trustResult == .trusted)
        #expect(ipLog.handshake?.evaluation.peerCertificate?.subjectAlternativeNames == [.ipAddress("127.0.0.1")])
        try await ipClient.close()
        await server.stop()
    }

    @Test("a server-name handler without an answer or a fallback identity fails with unrecognized_name")
    func serverNameWithoutIdentity() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        var configuration = TLSConfiguration.makeServerConfiguration(identity: nil)
        configuration.serverNameHandler = { _ in nil }
        let server = try await LoopbackTLSServer.start(context: try TLSContext(configuration: configuration))
        let log = ConnectionLog()
        _ = try await connectTLSClient(
            port: server.port,
            context: try pki.clientContext(),
            serverHostname: "nobody.example",
            log: log
        )
        try await waitUntil("the client gives up") { log.isInactive }
        let error = try #require(log.tlsErrors.first)
        #expect(error == .alertReceived)
        #expect(error.alert == "unrecognized name")
        #expect(server.log.tlsErrors.first == .handshakeFailed)
        await server.stop()
    }

    @Test("ALPN negotiates http/1.1 when both sides offer it, and nothing when they share none")
    func alpn() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let server = try await LoopbackTLSServer.start(
            context: try pki.serverContext { $0.applicationProtocols = ["h2", "http/1.1"] }
        )
        let log = ConnectionLog()
        let client = try await connectTLSClient(
            port: server.port,
            context: try pki.clientContext(),
            serverHostname: "localhost",
            log: log
        )
        try await waitUntil("the handshake completes") { log.handshake != nil && server.log.handshake != nil }
        #expect(log.handshake?.evaluation.applicationProtocol == "http/1.1")
        #expect(server.log.handshake?.evaluation.applicationProtocol == "http/1.1")
        try await client.close()
        await server.stop()

        let h2Only = try await LoopbackTLSServer.start(
            context: try pki.serverContext { $0.applicationProtocols = ["h2"] }
        )
        let none = ConnectionLog()
        let other = try await connectTLSClient(
            port: h2Only.port,
            context: try pki.clientContext(),
            serverHostname: "localhost",
            log: none
        )
        try await waitUntil("the handshake completes") { none.handshake != nil }
        #expect(none.handshake?.evaluation.applicationProtocol == nil)
        try await other.close()
        await h2Only.stop()
    }
}
