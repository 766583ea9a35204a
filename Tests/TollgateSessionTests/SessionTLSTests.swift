import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing
import TollgateHTTP
@testable import TollgateSession
import TollgateTLS
import TollgateTesting

/// Counts server-trust challenges and answers them with a scripted disposition.
final class TrustRecorder: SessionDelegate, @unchecked Sendable {
    let challenges = NIOLockedValueBox<[AuthenticationChallenge]>([])
    let answer: @Sendable (AuthenticationChallenge) -> ChallengeDisposition

    init(answer: @escaping @Sendable (AuthenticationChallenge) -> ChallengeDisposition = { _ in .performDefaultHandling }) {
        self.answer = answer
    }

    func session(_ session: Session, didReceive challenge: AuthenticationChallenge, completionHandler: @escaping @Sendable (ChallengeDisposition) -> Void) {
        challenges.withLockedValue { $0.append(challenge) }
        completionHandler(answer(challenge))
    }
}

@Suite("https through the session's TLS", .timeLimit(.minutes(1)))
struct SessionTLSTests {
    static func session(trusting pki: TestPKI?, delegate: (any SessionDelegate)? = nil, identity: Identity? = nil) -> Session {
        var configuration = SessionConfiguration.ephemeral
        configuration.tlsConfiguration = { _, _, defaults in
            var chosen = defaults
            if let pki { chosen.trustRoots = pki.trustRoots }
            chosen.identity = identity
            return chosen
        }
        return Session(configuration: configuration, delegate: delegate)
    }

    @Test("An https request to a server with a trusted chain succeeds, with TLS timings in the metrics")
    func trusted() async throws {
        let pki = try TestPKI()
        let origin = try await LoopbackOrigin.start(tls: pki.serverConfiguration) { _, respond in
            respond.send(status: 200, body: "secure")
        }
        defer { origin.stop() }
        let recorder = TrustRecorder()
        let session = Self.session(trusting: pki, delegate: recorder)
        let events = EventRecorder()
        let task = try session.dataTask(with: Request(url: origin.url("/s")))
        task.delegate = events
        task.resume()
        try await eventually("done") { events.completed }
        #expect(events.body == "secure")
        let transaction = try #require(events.metrics?.transactionMetrics.first)
        #expect(transaction.secureConnectionStartDate != nil)
        #expect(transaction.secureConnectionEndDate != nil)
        #expect(transaction.negotiatedTLSProtocolVersion != nil)
        // Reuse: the second request on the same connection raises no new challenge.
        _ = try await load(session, Request(url: origin.url("/s")))
        let challenges = recorder.challenges.withLockedValue { $0 }
        #expect(challenges.count == 1)
        let trust = try #require(challenges.first?.serverTrust)
        #expect(trust.isTrusted)
        #expect(trust.verifiedChain.count == 2)
        #expect(challenges.first?.protectionSpace.authenticationMethod == .serverTrust)
        #expect(origin.connectionCount == 1)
    }

    @Test("An unknown CA, a wrong host and an expired certificate each fail as untrusted, and nothing is sent")
    func untrusted() async throws {
        let pki = try TestPKI()
        let origin = try await LoopbackOrigin.start(tls: pki.serverConfiguration) { _, respond in respond.send(status: 200) }
        defer { origin.stop() }
        await #expect(throws: SessionError(.serverCertificateUntrusted)) {
            _ = try await Self.session(trusting: nil).data(for: Request(url: origin.url()))
        }
        await #expect(throws: SessionError(.serverCertificateUntrusted)) {
            _ = try await Self.session(trusting: pki).data(for: Request(url: origin.url(host: "localhost")))
        }
        let expired = try TestPKI(validity: 3600, notBeforeOffset: -7200)
        let stale = try await LoopbackOrigin.start(tls: expired.serverConfiguration) { _, respond in respond.send(status: 200) }
        defer { stale.stop() }
        do {
            _ = try await Self.session(trusting: expired).data(for: Request(url: stale.url()))
            Issue.record("an expired certificate was accepted")
        } catch let error as SessionError {
            #expect(error.code == .serverCertificateUntrusted)
            #expect(error.detail.contains("expired"))
        }
        #expect(origin.requestCount == 0)
        #expect(stale.requestCount == 0)
    }

    @Test("The delegate may accept an untrusted chain (insecure) or refuse a trusted one (a pin mismatch)")
    func delegateDecides() async throws {
        let pki = try TestPKI()
        let origin = try await LoopbackOrigin.start(tls: pki.serverConfiguration) { _, respond in respond.send(status: 200, body: "ok") }
        defer { origin.stop() }
        let insecure = TrustRecorder { _ in .useCredential(.serverTrust) }
        let (body, _) = try await Self.session(trusting: nil, delegate: insecure).data(for: Request(url: origin.url()))
        #expect(String(buffer: body) == "ok")

        let pinning = TrustRecorder { challenge in
            let presented = challenge.serverTrust?.presentedChain.map(\.spkiPin.description) ?? []
            return presented.contains("sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
                ? .performDefaultHandling
                : .cancelAuthenticationChallenge(reason: SessionError(.pinMismatch, nil, "presented: \(presented.joined(separator: ", "))"))
        }
        await #expect(throws: SessionError(.pinMismatch)) {
            _ = try await Self.session(trusting: pki, delegate: pinning).data(for: Request(url: origin.url("/pinned")))
        }
        #expect(origin.requests.map(\.path) == ["/"])
    }

    @Test("A server that requires a client certificate gets the configured identity; without one the task fails")
    func clientCertificate() async throws {
        let pki = try TestPKI()
        var server = pki.serverConfiguration
        server.clientCertificateRequirement = .required
        server.trustRoots = pki.trustRoots
        let origin = try await LoopbackOrigin.start(tls: server) { _, respond in respond.send(status: 200, body: "hello client") }
        defer { origin.stop() }
        let client = try pki.authority.issueLeaf(for: "client.test", usage: .clientAuth)
        let (body, _) = try await Self.session(trusting: pki, identity: client).data(for: Request(url: origin.url()))
        #expect(String(buffer: body) == "hello client")
        // TLS 1.3: the server's "certificate required" alert becomes clientCertificateRequired when it
        // arrives, but a server that closes at once with the request unread sends a reset that can
        // discard the alert (then: networkConnectionLost), so only the failure is certain here.
        await #expect(throws: SessionError.self) {
            _ = try await Self.session(trusting: pki).data(for: Request(url: origin.url()))
        }
    }
}

@Suite("Trust failures and the cache", .timeLimit(.minutes(1)))
struct SessionTrustCacheTests {
    @Test("A pin mismatch is never answered with a stale stored copy (stale-if-error covers origin failures only)")
    func pinMismatchNotServedStale() async throws {
        let pki = try TestPKI()
        let origin = try await LoopbackOrigin.start(tls: pki.serverConfiguration) { _, respond in
            respond.send(status: 200, headers: ["Cache-Control": "max-age=0, stale-if-error=600", "ETag": "\"p\""], body: "pinned")
        }
        defer { origin.stop() }
        let fixture = try CacheFixture()
        func session(_ delegate: TrustRecorder) -> Session {
            var configuration = SessionConfiguration.ephemeral
            configuration.responseCache = fixture.cache
            configuration.tlsConfiguration = { _, _, defaults in
                var chosen = defaults
                chosen.trustRoots = pki.trustRoots
                return chosen
            }
            return Session(configuration: configuration, delegate: delegate)
        }
        let (stored, _) = try await session(TrustRecorder()).data(for: Request(url: origin.url("/p")))
        #expect(String(buffer: stored) == "pinned")
        let mismatch = TrustRecorder { _ in .cancelAuthenticationChallenge(reason: SessionError(.pinMismatch, nil, "wrong pin")) }
        await #expect(throws: SessionError(.pinMismatch)) {
            _ = try await session(mismatch).data(for: Request(url: origin.url("/p")))
        }
    }
}
