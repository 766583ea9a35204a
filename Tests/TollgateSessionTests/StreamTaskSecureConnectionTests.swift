import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing
import TollgateTLS
import TollgateTesting

@testable import TollgateSession

/// Records the challenges that reach the session level, answers them with `answer`.
private final class SessionTrustRecorder: SessionDelegate, StreamTaskDelegate, @unchecked Sendable {
    let challenges = NIOLockedValueBox<[String]>([])
    let completions = NIOLockedValueBox<[String]>([])
    let answer: ChallengeDisposition

    init(answer: ChallengeDisposition) { self.answer = answer }

    func session(
        _ session: Session,
        didReceive challenge: AuthenticationChallenge,
        completionHandler: @escaping @Sendable (ChallengeDisposition) -> Void
    ) {
        let trusted = challenge.serverTrust?.isTrusted == true ? "trusted" : "untrusted"
        challenges.withLockedValue {
            let method = challenge.protectionSpace.authenticationMethod == .serverTrust ? "serverTrust" : "other"
            $0.append("\(method) \(challenge.protectionSpace.host):\(challenge.protectionSpace.port) \(trusted)")
        }
        completionHandler(answer)
    }

    func task(_ task: SessionTask, didCompleteWithError error: SessionError?) {
        completions.withLockedValue { $0.append(error.map { "\($0.code)" } ?? "ok") }
    }
}

@Suite("Stream tasks: startSecureConnection", .serialized, .timeLimit(.minutes(1)))
struct StreamTaskSecureConnectionTests {
    private func session(trusting pki: TestPKI?, delegate: SessionTrustRecorder) -> Session {
        var configuration = SessionConfiguration.ephemeral
        configuration.tlsConfiguration = pki?.sessionTLSConfiguration
        return Session(configuration: configuration, delegate: delegate)
    }

    private func upgrade(_ task: StreamTask) async throws {
        try await task.write(ByteBuffer(string: "STARTTLS\n"), timeout: .seconds(5))
        let go = try await task.readData(ofMinLength: 3, maxLength: 3, timeout: .seconds(5))
        #expect(go.data.map { String(buffer: $0) } == "GO\n")
        task.startSecureConnection()
    }

    @Test("TLS starts over the open connection: the session-level delegate decides trust, then bytes flow encrypted")
    func startsTLS() async throws {
        let pki = try TestPKI()
        let server = try await StartTLSServer.start(pki: pki)
        defer { server.stop() }
        let recorder = SessionTrustRecorder(answer: .performDefaultHandling)
        let session = session(trusting: pki, delegate: recorder)
        defer { session.invalidateAndCancel() }
        let port = server.port
        let task = try session.streamTask(withHostName: "127.0.0.1", port: port)
        task.resume()
        try await upgrade(task)
        try await task.write(ByteBuffer(string: "secret"), timeout: .seconds(5))
        let echoed = try await task.readData(ofMinLength: 6, maxLength: 6, timeout: .seconds(5))
        #expect(echoed.data.map { String(buffer: $0) } == "secret")
        #expect(server.decrypted == "secret")  // it went through the server's TLS
        #expect(recorder.challenges.withLockedValue { $0 } == ["serverTrust 127.0.0.1:\(port) trusted"])
        #expect(throws: SessionError(.unsupportedOperation)) { try task.stopSecureConnection() }
    }

    @Test("Under TLS, closeWrite() sends close_notify: the server reads its EOF and still answers; the answer, then EOF, reach the task")
    func closeWriteUnderTLS() async throws {
        let pki = try TestPKI()
        let server = try await StartTLSServer.start(pki: pki)
        defer { server.stop() }
        let session = session(trusting: pki, delegate: SessionTrustRecorder(answer: .performDefaultHandling))
        defer { session.invalidateAndCancel() }
        let task = try session.streamTask(withHostName: "127.0.0.1", port: server.port)
        task.resume()
        try await upgrade(task)
        try await task.write(ByteBuffer(string: "last"), timeout: .seconds(5))
        let echoed = try await task.readData(ofMinLength: 4, maxLength: 4, timeout: .seconds(5))
        #expect(echoed.data.map { String(buffer: $0) } == "last")
        task.closeWrite()
        #expect(try await readToEOF(task) == "bye\n")
        #expect(server.decrypted == "last")
    }

    @Test("An untrusted certificate under default handling fails the stream with serverCertificateUntrusted; no byte flows")
    func untrustedFails() async throws {
        let pki = try TestPKI()
        let server = try await StartTLSServer.start(pki: pki)
        defer { server.stop() }
        let recorder = SessionTrustRecorder(answer: .performDefaultHandling)
        let session = session(trusting: nil, delegate: recorder)
        defer { session.invalidateAndCancel() }
        let task = try session.streamTask(withHostName: "127.0.0.1", port: server.port)
        task.resume()
        try await upgrade(task)
        let write = Task { try await task.write(ByteBuffer(string: "secret"), timeout: .seconds(5)) }
        await #expect(throws: SessionError(.serverCertificateUntrusted)) {
            _ = try await task.readData(ofMinLength: 1, maxLength: 10, timeout: .seconds(5))
        }
        _ = await write.result
        try await eventually("complete") { !recorder.completions.withLockedValue { $0 }.isEmpty }
        #expect(recorder.completions.withLockedValue { $0 } == ["serverCertificateUntrusted"])
        #expect(recorder.challenges.withLockedValue { $0 }.first?.hasSuffix("untrusted") == true)
        #expect(server.decrypted.isEmpty)
    }

    @Test("A delegate that accepts the server's trust (as an insecure or pinned rule does) lets an untrusted chain through")
    func delegateAccepts() async throws {
        let pki = try TestPKI()
        let server = try await StartTLSServer.start(pki: pki)
        defer { server.stop() }
        let recorder = SessionTrustRecorder(answer: .useCredential(.serverTrust))
        let session = session(trusting: nil, delegate: recorder)
        defer { session.invalidateAndCancel() }
        let task = try session.streamTask(withHostName: "127.0.0.1", port: server.port)
        task.resume()
        try await upgrade(task)
        try await task.write(ByteBuffer(string: "hi"), timeout: .seconds(5))
        let echoed = try await task.readData(ofMinLength: 2, maxLength: 2, timeout: .seconds(5))
        #expect(echoed.data.map { String(buffer: $0) } == "hi")
    }
}
