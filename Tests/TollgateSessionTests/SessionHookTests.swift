import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing
import TollgateCache
import TollgateHTTP
@testable import TollgateSession
import TollgateTesting

@Suite("Challenges, cookies and the cache hook", .timeLimit(.minutes(1)))
struct SessionHookTests {
    static func basicOrigin() async throws -> LoopbackOrigin {
        // alice:secret
        try await LoopbackOrigin.start { request, respond in
            if request.headerFields["Authorization"] == "Basic YWxpY2U6c2VjcmV0" {
                respond.send(status: 200, body: "welcome")
            } else {
                respond.send(status: 401, headers: ["WWW-Authenticate": "Basic realm=\"Restricted\""], body: "denied")
            }
        }
    }

    @Test("A Basic challenge goes to the task level, even when the session has a session-level handler")
    func basicGoesToTaskLevel() async throws {
        let origin = try await Self.basicOrigin()
        defer { origin.stop() }
        let recorder = EventRecorder()
        recorder.onSessionChallenge = { _ in .cancelAuthenticationChallenge }
        recorder.onChallenge = { challenge in
            #expect(challenge.protectionSpace.realm == "Restricted")
            #expect(challenge.protectionSpace.authenticationMethod == .httpBasic)
            return .useCredential(Credential(user: "alice", password: "secret", persistence: .none))
        }
        let session = Session(configuration: .ephemeral, delegate: recorder)
        let task = try session.dataTask(with: Request(url: origin.url()))
        task.resume()
        try await eventually("done") { recorder.completed }
        #expect(recorder.body == "welcome")
        #expect(recorder.events.contains("task-challenge basic failures=0"))
        #expect(!recorder.events.contains { $0.hasPrefix("session-challenge") })
        #expect(origin.requestCount == 2)
    }

    @Test("A rejected credential raises the challenge again with a failure count; giving up delivers the 401")
    func wrongPassword() async throws {
        let origin = try await Self.basicOrigin()
        defer { origin.stop() }
        let recorder = EventRecorder()
        recorder.onChallenge = { challenge in
            challenge.previousFailureCount == 0
                ? .useCredential(Credential(user: "alice", password: "wrong", persistence: .none))
                : .performDefaultHandling
        }
        let session = Session(configuration: .ephemeral, delegate: recorder)
        let task = try session.dataTask(with: Request(url: origin.url()))
        task.resume()
        try await eventually("done") { recorder.completed }
        #expect(recorder.events.filter { $0.hasPrefix("task-challenge") } == ["task-challenge basic failures=0", "task-challenge basic failures=1"])
        #expect(task.response?.status == 401)
        #expect(recorder.body == "denied")
    }

    @Test("Session-level challenge kinds go to the session handler first, then to the task if it has none")
    func sessionLevelRouting() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200) }
        defer { origin.stop() }
        let space = ProtectionSpace(host: "127.0.0.1", port: origin.port, protocol: "https", authenticationMethod: .serverTrust)

        let withSessionHandler = EventRecorder()
        withSessionHandler.onSessionChallenge = { _ in .performDefaultHandling }
        let answered = NIOLockedValueBox<String?>(nil)
        let session = Session(configuration: .ephemeral, delegate: withSessionHandler)
        let task = try session.dataTask(with: Request(url: origin.url()))
        task.onLoop {
            task.raise(AuthenticationChallenge(protectionSpace: space)) { _ in answered.withLockedValue { $0 = "answered" } }
        }
        try await eventually("answered") { answered.withLockedValue { $0 } != nil }
        #expect(withSessionHandler.events == ["session-challenge server-trust"])

        let taskOnly = EventRecorder()
        let otherSession = Session(configuration: .ephemeral, delegate: taskOnly)
        let other = try otherSession.dataTask(with: Request(url: origin.url()))
        let done = NIOLockedValueBox(false)
        other.onLoop { other.raise(AuthenticationChallenge(protectionSpace: space)) { _ in done.withLockedValue { $0 = true } } }
        try await eventually("answered") { done.withLockedValue { $0 } }
        #expect(taskOnly.events == ["task-challenge server-trust failures=0"])
        task.cancel()
        other.cancel()
    }

    @Test("Cookies from the store are sent and Set-Cookie is handed to it, unless the policy says never")
    func cookieHook() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.send(status: 200, headers: ["Set-Cookie": "id=42; Path=/"], body: "ok")
        }
        defer { origin.stop() }
        let store = RecordingCookieStore()
        var configuration = SessionConfiguration.ephemeral
        configuration.cookieStorage = store
        configuration.httpCookieAcceptPolicy = .always
        _ = try await Session(configuration: configuration).data(for: Request(url: origin.url()))
        #expect(origin.requests.last?.headerFields["Cookie"] == "stored=1")
        #expect(store.received == ["id=42; Path=/"])

        configuration.httpCookieAcceptPolicy = .never
        configuration.httpShouldSetCookies = false
        _ = try await Session(configuration: configuration).data(for: Request(url: origin.url()))
        #expect(origin.requests.last?.headerFields["Cookie"] == nil)
        #expect(store.received.count == 1)
    }
}

final class RecordingCookieStore: CookieStoring, @unchecked Sendable {
    private let lock = NIOLock()
    private var _received: [String] = []
    var received: [String] { lock.withLock { _received } }
    func cookieHeader(for url: HTTPURL) -> String? { "stored=1" }
    func store(setCookieValues: [String], from url: HTTPURL, policy: CookieAcceptPolicy) {
        lock.withLock { _received += setCookieValues }
    }
    func removeAll() { lock.withLock { _received = [] } }
}

