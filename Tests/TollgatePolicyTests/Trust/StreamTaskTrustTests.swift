import Foundation
import NIOCore
import Testing
import TollgatePolicy
import TollgateSession
import TollgateTesting

/// A stream task's `startSecureConnection` on a policy session: the host rule's trust answers its
/// server-trust challenge, as it does a data task's.
@Suite("The policy answers a stream task's startSecureConnection", .serialized, .timeLimit(.minutes(1)))
struct StreamTaskTrustTests {
    /// Opens a stream to the server through the runtime's session, says STARTTLS, starts TLS and
    /// sends `text`; returns what came back.
    private func exchange(_ text: String, runtime: PolicyRuntime, server: StartTLSServer) async throws -> String {
        let task = try runtime.route(host: "127.0.0.1", port: server.port).session
            .streamTask(withHostName: "127.0.0.1", port: server.port)
        task.resume()
        defer { task.cancel() }
        try await task.write(ByteBuffer(string: "STARTTLS\n"), timeout: .seconds(5))
        _ = try await task.readData(ofMinLength: 3, maxLength: 3, timeout: .seconds(5))
        task.startSecureConnection()
        try await task.write(ByteBuffer(string: text), timeout: .seconds(5))
        let read = try await task.readData(ofMinLength: text.utf8.count, maxLength: 100, timeout: .seconds(5))
        return read.data.map { String(buffer: $0) } ?? ""
    }

    /// A STARTTLS server with the fixture's certificate and a runtime whose rule for 127.0.0.1
    /// trusts the fixture's CA and pins `pin` (the leaf's when nil).
    private func pinned(_ pin: String?) async throws -> (TrustFixture, StartTLSServer, PolicyRuntime) {
        let f = try TrustFixture()
        let server = try await StartTLSServer.start(pki: f.pki)
        let runtime = try f.runtime(
            hosts: """
                  - match: "127.0.0.1"
                    trust: { roots: "\(f.pki.caFile)", pins: ["\(pin ?? f.leafPin)"] }
                """
        )
        return (f, server, runtime)
    }

    @Test func theRulesRootsAndRightPinLetTheStreamThrough() async throws {
        let (_, server, runtime) = try await pinned(nil)
        defer {
            server.stop()
            runtime.shutdown()
        }
        #expect(try await exchange("pinned", runtime: runtime, server: server) == "pinned")
        #expect(runtime.trustFailures.isEmpty)
    }

    @Test func aWrongPinFailsTheStreamAsPinMismatchAndNothingIsSent() async throws {
        let (_, server, runtime) = try await pinned(try TrustFixture.unusedPin())
        defer {
            server.stop()
            runtime.shutdown()
        }
        await #expect(throws: SessionError(.pinMismatch)) { _ = try await exchange("never", runtime: runtime, server: server) }
        #expect(server.decrypted.isEmpty)
        #expect(runtime.trustFailures == ["127.0.0.1": 1])
    }
}

/// The client-certificate challenge, answered from the host rule's `client-identity`.
@Suite("The policy answers the client-certificate challenge")
struct PolicyClientCertificateTests {
    @Test func aRuleWithAnIdentityAnswersWithItsFilesAndOneWithoutLeavesItToTheTask() async throws {
        let f = try TrustFixture()
        let identity = try f.writeClientIdentity()
        let runtime = try f.runtime(
            hosts: """
                  - match: "mtls.test"
                    client-identity: { certificate: "\(identity.certificate)", key: "\(identity.key)" }
                """
        )
        defer { runtime.shutdown() }
        let session = runtime.route(host: "mtls.test", port: 443).session
        let delegate = try #require(session.delegate)
        func answer(_ host: String) async -> ChallengeDisposition {
            await withCheckedContinuation { continuation in
                let space = ProtectionSpace(host: host, port: 443, protocol: "https", authenticationMethod: .clientCertificate)
                delegate.session(session, didReceive: AuthenticationChallenge(protectionSpace: space)) { continuation.resume(returning: $0) }
            }
        }
        let policy = try #require(delegate as? PolicySessionDelegate)
        #expect(policy.clientCertificateAnswer(host: "mtls.test", port: 443) != nil)
        #expect(policy.clientCertificateAnswer(host: "other.test", port: 443) == nil)
        let given = await answer("mtls.test")
        #expect("\(given)".contains(identity.certificate), "\(given)")
        let other = await answer("other.test")
        #expect(!"\(other)".contains(identity.certificate))
    }
}
