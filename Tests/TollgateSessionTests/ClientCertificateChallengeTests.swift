import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing
import TollgateTLS
import TollgateTesting

@testable import TollgateSession

/// A server that asks for a client certificate the session has none for: the client-certificate
/// challenge, its routing and each answer, over real TLS (OpenSSL on both sides).
@Suite("The client-certificate challenge", .serialized, .timeLimit(.minutes(1)))
struct ClientCertificateChallengeTests {
    /// An origin whose TLS asks for (`requirement`) a client certificate issued by the test CA.
    private func origin(_ pki: TestPKI, _ requirement: ClientCertificateRequirement) async throws -> LoopbackOrigin {
        var server = pki.serverConfiguration
        server.clientCertificateRequirement = requirement
        server.trustRoots = pki.trustRoots
        return try await LoopbackOrigin.start(tls: server) { _, respond in respond.send(status: 200, body: "hello client") }
    }

    /// The test CA's client identity written to files (what a credential names).
    private func identityFiles(_ pki: TestPKI) throws -> (certificate: String, key: String, directory: URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-client-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let client = try pki.authority.issueLeaf(for: "client.test", usage: .clientAuth)
        let certificate = directory.appendingPathComponent("client.pem").path
        try client.certificateChain.map(\.pemString).joined().write(toFile: certificate, atomically: true, encoding: .utf8)
        let key = directory.appendingPathComponent("client.key").path
        try client.privateKey.write(toPEMFile: key)
        return (certificate, key, directory)
    }

    private func session(_ pki: TestPKI, _ recorder: EventRecorder) -> Session {
        var configuration = SessionConfiguration.ephemeral
        configuration.tlsConfiguration = pki.sessionTLSConfiguration
        return Session(configuration: configuration, delegate: recorder)
    }

    @Test("The challenge goes to the session level; the identity it answers with is presented on a new connection and kept for the origin")
    func answeredWithAnIdentity() async throws {
        let pki = try TestPKI()
        let origin = try await origin(pki, .required)
        defer { origin.stop() }
        let files = try identityFiles(pki)
        defer { try? FileManager.default.removeItem(at: files.directory) }
        let recorder = EventRecorder()
        recorder.onSessionChallenge = { challenge in
            challenge.protectionSpace.authenticationMethod == .clientCertificate
                ? .useCredential(Credential(clientCertificatePath: files.certificate, keyPath: files.key)) : .performDefaultHandling
        }
        let session = session(pki, recorder)
        defer { session.invalidateAndCancel() }
        let (body, _) = try await session.data(for: Request(url: origin.url("/one")))
        #expect(String(buffer: body) == "hello client")
        let (again, _) = try await session.data(for: Request(url: origin.url("/two")))
        #expect(String(buffer: again) == "hello client")
        // Asked once: the second request's connection (if new) presents the kept identity.
        #expect(recorder.events.filter { $0 == "session-challenge client-certificate" }.count == 1)
        #expect(origin.requests.map(\.target) == ["/one", "/two"])
    }

    @Test("Default handling goes on without a certificate: a server that only asks serves, one that requires refuses")
    func defaultHandling() async throws {
        let pki = try TestPKI()
        let asking = try await origin(pki, .requested)
        defer { asking.stop() }
        let recorder = EventRecorder()
        recorder.onSessionChallenge = { _ in .performDefaultHandling }
        let session = session(pki, recorder)
        defer { session.invalidateAndCancel() }
        let (body, _) = try await session.data(for: Request(url: asking.url("/")))
        #expect(String(buffer: body) == "hello client")
        #expect(recorder.events.contains("session-challenge client-certificate"))

        let requiring = try await origin(pki, .required)
        defer { requiring.stop() }
        await #expect(throws: SessionError.self) { _ = try await session.data(for: Request(url: requiring.url("/"))) }
        #expect(requiring.requestCount == 0)
    }

    @Test("Cancelling the challenge fails the task with clientCertificateRequired, nothing sent")
    func cancelled() async throws {
        let pki = try TestPKI()
        let origin = try await origin(pki, .requested)
        defer { origin.stop() }
        let recorder = EventRecorder()
        recorder.onSessionChallenge = { challenge in
            challenge.protectionSpace.authenticationMethod == .clientCertificate ? .cancelAuthenticationChallenge : .performDefaultHandling
        }
        let session = session(pki, recorder)
        defer { session.invalidateAndCancel() }
        await #expect(throws: SessionError(.clientCertificateRequired)) { _ = try await session.data(for: Request(url: origin.url("/"))) }
        #expect(origin.requestCount == 0)
    }

    @Test("A server that asks nothing raises no challenge")
    func notAsked() async throws {
        let pki = try TestPKI()
        let origin = try await origin(pki, .notRequested)
        defer { origin.stop() }
        let recorder = EventRecorder()
        recorder.onSessionChallenge = { _ in .performDefaultHandling }
        let session = session(pki, recorder)
        defer { session.invalidateAndCancel() }
        _ = try await session.data(for: Request(url: origin.url("/")))
        #expect(!recorder.events.contains { $0.contains("client-certificate") })
    }
}

/// The session's lowest TLS version, against a real server that speaks no later one.
@Suite("The session's minimum TLS version", .timeLimit(.minutes(1)))
struct SessionTLSVersionTests {
    @Test("tlsMinimumSupportedProtocolVersion: a TLS 1.2-only server is refused by a session asking for 1.3, served by the default")
    func minimumVersion() async throws {
        let pki = try TestPKI()
        var server = pki.serverConfiguration
        server.maximumVersion = .tlsv1_2
        let origin = try await LoopbackOrigin.start(tls: server) { _, respond in respond.send(status: 200, body: "1.2") }
        defer { origin.stop() }
        var strict = SessionConfiguration.ephemeral
        strict.tlsConfiguration = pki.sessionTLSConfiguration
        strict.tlsMinimumSupportedProtocolVersion = .tlsv1_3
        let strictSession = Session(configuration: strict)
        defer { strictSession.invalidateAndCancel() }
        await #expect(throws: SessionError(.secureConnectionFailed)) { _ = try await strictSession.data(for: Request(url: origin.url("/"))) }
        var lenient = strict
        lenient.tlsMinimumSupportedProtocolVersion = .tlsv1_2
        let lenientSession = Session(configuration: lenient)
        defer { lenientSession.invalidateAndCancel() }
        let (body, _) = try await lenientSession.data(for: Request(url: origin.url("/")))
        #expect(String(buffer: body) == "1.2")
    }
}
