import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing
import TollgateHTTP
import TollgateTesting

@testable import TollgateSession

@Suite("Basic and Digest against an origin that checks them", .timeLimit(.minutes(1)))
struct SessionAuthenticationTests {
    static let alice = Credential(user: "alice", password: "secret", persistence: .forSession)
    static let wrong = Credential(user: "alice", password: "wrong", persistence: .forSession)

    static func session(_ delegate: ChallengeAnswerer?, storage: CredentialStorage? = CredentialStorage()) -> Session {
        var configuration = SessionConfiguration.ephemeral
        configuration.credentialStorage = storage
        return Session(configuration: configuration, delegate: delegate)
    }

    @Test("Digest MD5 with qop=auth: one challenge, one answer the origin accepts")
    func digestMD5() async throws {
        let server = try await AuthOrigin.start()
        defer { server.stop() }
        let answerer = ChallengeAnswerer { _ in .useCredential(Self.alice) }
        let (body, response) = try await Self.session(answerer).data(for: Request(url: server.url()))
        #expect(response.status == 200)
        #expect(String(buffer: body) == "welcome")
        #expect(server.log == ["challenge", "ok digest MD5"])
        let challenge = try #require(answerer.challenges.first)
        #expect(challenge.protectionSpace.authenticationMethod == .httpDigest)
        #expect(challenge.protectionSpace.realm == "Restricted")
        #expect(challenge.protectionSpace.host == "127.0.0.1")
        #expect(challenge.protectionSpace.port == server.origin.port)
        #expect(challenge.protectionSpace.protocol == "http")
        #expect(challenge.previousFailureCount == 0)
        #expect(challenge.parameters["qop"] == "auth")
    }

    @Test("Offered MD5 and SHA-256, the session answers SHA-256; without qop it answers the RFC 2069 form")
    func digestSHA256AndNoQop() async throws {
        let both = try await AuthOrigin.start(AuthOrigin.Options(digestAlgorithms: ["MD5", "SHA-256"]))
        defer { both.stop() }
        let answerer = ChallengeAnswerer { _ in .useCredential(Self.alice) }
        let (_, response) = try await Self.session(answerer).data(for: Request(url: both.url("/a?b=c")))
        #expect(response.status == 200)
        #expect(both.log == ["challenge", "ok digest SHA-256"])

        let legacy = try await AuthOrigin.start(AuthOrigin.Options(qop: nil))
        defer { legacy.stop() }
        let (_, legacyResponse) = try await Self.session(answerer).data(for: Request(url: legacy.url()))
        #expect(legacyResponse.status == 200)
        #expect(legacy.log == ["challenge", "ok digest MD5"])
        let sent = try #require(legacy.origin.requests.last?.headerFields["Authorization"])
        #expect(!sent.contains("nc=") && !sent.contains("cnonce"))
    }

    @Test("A wrong Digest password: retried once, then the 401 goes back; the same credential is never sent twice")
    func digestWrongPassword() async throws {
        let server = try await AuthOrigin.start()
        defer { server.stop() }
        // A delegate that keeps answering with the same bad password.
        let answerer = ChallengeAnswerer { _ in .useCredential(Self.wrong) }
        let (body, response) = try await Self.session(answerer).data(for: Request(url: server.url()))
        #expect(response.status == 401)
        #expect(String(buffer: body) == "denied")
        #expect(server.origin.requestCount == 2)
        #expect(server.log == ["challenge", "refused password"])
        #expect(answerer.challenges.map(\.previousFailureCount) == [0, 1])
        #expect(answerer.challenges.last?.proposedCredential?.password == "wrong")
    }

    @Test("stale=true: the answer is sent again with the new nonce, without asking the delegate again")
    func staleNonce() async throws {
        let server = try await AuthOrigin.start(AuthOrigin.Options(firstNonceStale: true))
        defer { server.stop() }
        let answerer = ChallengeAnswerer { _ in .useCredential(Self.alice) }
        let (_, response) = try await Self.session(answerer).data(for: Request(url: server.url()))
        #expect(response.status == 200)
        #expect(server.log == ["challenge", "stale", "ok digest MD5"])
        #expect(answerer.challenges.count == 1)
    }

    @Test("A wrong Basic password: the delegate sees the failure count, and giving up delivers the 401")
    func basicWrongPassword() async throws {
        let server = try await AuthOrigin.start(AuthOrigin.Options(digestAlgorithms: [], offerBasic: true))
        defer { server.stop() }
        let answerer = ChallengeAnswerer { challenge in
            challenge.previousFailureCount == 0 ? .useCredential(Self.wrong) : .performDefaultHandling
        }
        let (_, response) = try await Self.session(answerer).data(for: Request(url: server.url()))
        #expect(response.status == 401)
        #expect(server.log == ["challenge", "refused basic"])
        #expect(answerer.challenges.map(\.previousFailureCount) == [0, 1])
    }

    @Test("rejectProtectionSpace on Digest offers the next challenge the origin sent (Basic)")
    func rejectProtectionSpaceMovesOn() async throws {
        let server = try await AuthOrigin.start(AuthOrigin.Options(offerBasic: true))
        defer { server.stop() }
        let answerer = ChallengeAnswerer { challenge in
            challenge.protectionSpace.authenticationMethod == .httpDigest
                ? .rejectProtectionSpace : .useCredential(Self.alice)
        }
        let (_, response) = try await Self.session(answerer).data(for: Request(url: server.url()))
        #expect(response.status == 200)
        #expect(server.log == ["challenge", "ok basic"])
        #expect(answerer.challenges.map(\.protectionSpace.authenticationMethod) == [.httpDigest, .httpBasic])
    }

    @Test("Basic goes preemptively to a space that authenticated in the session, at or below its directory only")
    func preemptiveBasic() async throws {
        let server = try await AuthOrigin.start(AuthOrigin.Options(digestAlgorithms: [], offerBasic: true))
        defer { server.stop() }
        let answerer = ChallengeAnswerer { _ in .useCredential(Self.alice) }
        let session = Self.session(answerer)
        _ = try await session.data(for: Request(url: server.url("/private/page")))
        #expect(server.origin.requestCount == 2)
        // Same directory and deeper: no 401 first.
        _ = try await session.data(for: Request(url: server.url("/private/other")))
        _ = try await session.data(for: Request(url: server.url("/private/deeper/x")))
        #expect(server.origin.requestCount == 4)
        #expect(server.origin.requests[2].headerFields["Authorization"] == "Basic YWxpY2U6c2VjcmV0")
        #expect(answerer.challenges.count == 1)
        // Outside the directory: challenged first, as the origin asks.
        _ = try await session.data(for: Request(url: server.url("/public")))
        #expect(server.origin.requests[4].headerFields["Authorization"] == nil)
        #expect(answerer.challenges.count == 2)
        // Another session knows nothing of it.
        _ = try await Self.session(answerer).data(for: Request(url: server.url("/private/page")))
        #expect(server.origin.requests[6].headerFields["Authorization"] == nil)
    }

    @Test("A credential with persistence none is used once: nothing stored, nothing sent preemptively")
    func persistenceNone() async throws {
        let server = try await AuthOrigin.start(AuthOrigin.Options(digestAlgorithms: [], offerBasic: true))
        defer { server.stop() }
        let storage = CredentialStorage()
        let once = Credential(user: "alice", password: "secret", persistence: .none)
        let answerer = ChallengeAnswerer { _ in .useCredential(once) }
        let session = Self.session(answerer, storage: storage)
        _ = try await session.data(for: Request(url: server.url()))
        _ = try await session.data(for: Request(url: server.url()))
        #expect(server.origin.requestCount == 4)
        #expect(storage.allCredentials.isEmpty)
    }

    @Test("A credential that worked is kept for its space; default handling answers from the storage")
    func defaultHandlingUsesStorage() async throws {
        let server = try await AuthOrigin.start()
        defer { server.stop() }
        let storage = CredentialStorage()
        let space = ProtectionSpace(
            host: "127.0.0.1",
            port: server.origin.port,
            protocol: "http",
            realm: "Restricted",
            authenticationMethod: .httpDigest
        )
        storage.setDefaultCredential(Self.alice, for: space)
        // No delegate at all: the session's default handling.
        let (_, response) = try await Self.session(nil, storage: storage).data(for: Request(url: server.url()))
        #expect(response.status == 200)
        #expect(server.log == ["challenge", "ok digest MD5"])
        // With a delegate that defers, the storage's credential is proposed.
        let answerer = ChallengeAnswerer { _ in .performDefaultHandling }
        _ = try await Self.session(answerer, storage: storage).data(for: Request(url: server.url()))
        #expect(answerer.challenges.first?.proposedCredential == Self.alice)
        #expect(server.log.suffix(2) == ["challenge", "ok digest MD5"])
    }

    @Test("A refused preemptive credential is forgotten and counts as a failure; a stored one is not retried")
    func refusedPreemptive() async throws {
        let server = try await AuthOrigin.start(AuthOrigin.Options(digestAlgorithms: [], offerBasic: true))
        defer { server.stop() }
        let storage = CredentialStorage()
        let answerer = ChallengeAnswerer { challenge in
            challenge.previousFailureCount == 0 ? .useCredential(Self.wrong) : .performDefaultHandling
        }
        // Authenticate once with a password the origin then no longer accepts.
        let session = Self.session(ChallengeAnswerer { _ in .useCredential(Self.alice) }, storage: storage)
        _ = try await session.data(for: Request(url: server.url()))
        let space = ProtectionSpace(
            host: "127.0.0.1",
            port: server.origin.port,
            protocol: "http",
            realm: "Restricted",
            authenticationMethod: .httpBasic
        )
        storage.remove(Self.alice, for: space)
        storage.set(Self.wrong, for: space)
        storage.rememberAuthenticated(Self.wrong, in: space, url: server.url())
        let other = Session(configuration: session.configuration, delegate: answerer)
        let (_, response) = try await other.data(for: Request(url: server.url()))
        #expect(response.status == 401)
        // The preemptive wrong one, then the 401 delivered: default handling would propose the
        // stored credential, which was just refused.
        #expect(server.origin.requestCount == 3)
        #expect(answerer.challenges.map(\.previousFailureCount) == [1])
        #expect(storage.preemptiveCredential(for: server.url()) == nil)
    }

    @Test("A request with its own Authorization gets its 401: the client's credentials are its own")
    func clientAuthorizationIsNotAnswered() async throws {
        let server = try await AuthOrigin.start(AuthOrigin.Options(digestAlgorithms: [], offerBasic: true))
        defer { server.stop() }
        let answerer = ChallengeAnswerer { _ in .useCredential(Self.alice) }
        let request = Request(url: server.url(), headerFields: ["Authorization": "Basic Ym9iOng="])
        let (_, response) = try await Self.session(answerer).data(for: request)
        #expect(response.status == 401)
        #expect(answerer.challenges.isEmpty)
        #expect(server.origin.requestCount == 1)
    }

    @Test("Cancelling the challenge fails the task with userCancelledAuthentication")
    func cancelled() async throws {
        let server = try await AuthOrigin.start()
        defer { server.stop() }
        let answerer = ChallengeAnswerer { _ in .cancelAuthenticationChallenge }
        await #expect(throws: SessionError(.userCancelledAuthentication)) {
            _ = try await Self.session(answerer).data(for: Request(url: server.url()))
        }
    }
}
