import Foundation
import Testing
import TollgateHTTP
import TollgatePolicy
import TollgateSession

/// Helpers for the runtime tests: configurations, URLs, answers from completion handlers.
enum RuntimeFixture {
    /// Two sessions and four rules: `api.example.com` on `api` (follow-same-host, force-ttl 10m),
    /// `blocked.example.com` denied, `**.example.com` on `web` (follow), `nocache.test` not stored.
    static let yaml = """
        sessions:
          default:
            configuration: ephemeral
          api:
            configuration: ephemeral
            redirects: follow-same-host
            max-connections-per-host: 2
          web:
            configuration: ephemeral
            redirects: follow
        hosts:
          - match: "api.example.com"
            session: api
            cache: { force-ttl: 10m }
          - match: "blocked.example.com"
            trust: { deny: true }
          - match: ["**.example.com", "example.org"]
            session: web
          - match: "nocache.test"
            cache: { store: deny }
        """

    static func configuration(_ text: String = yaml) throws -> PolicyConfiguration {
        try Fixture.load(text)
    }

    static func url(_ text: String) throws -> HTTPURL { try #require(HTTPURL(string: text)) }

    static func request(_ text: String) throws -> Request { Request(url: try url(text)) }

    /// Waits until `condition` holds, polling.
    static func eventually(
        _ what: String,
        timeout: Duration = .seconds(10),
        _ condition: () -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + timeout
        while !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("timed out waiting for \(what)")
                return
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}

/// The value a completion handler was called with (handlers are `@Sendable`).
final class Answer<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value?
    private var calls = 0

    var value: Value? { lock.withLock { stored } }
    var count: Int { lock.withLock { calls } }

    var handler: @Sendable (Value) -> Void {
        { value in
            self.lock.withLock {
                self.stored = value
                self.calls += 1
            }
        }
    }
}

/// Values appended from any thread.
final class Recorder<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [Value] = []

    var values: [Value] { lock.withLock { stored } }

    func append(_ value: Value) { lock.withLock { stored.append(value) } }
}
