import Foundation
import NIOConcurrencyHelpers
import Testing
import TollgateCache
import TollgateHTTP
@testable import TollgateSession
import TollgateTesting

/// `SessionConfiguration.staleIfErrorWindow`: the operator's own `stale-if-error` for responses
/// that carry none, asked when a stale response is revalidated.
@Suite("The session's stale-if-error window", .timeLimit(.minutes(1)))
struct StaleIfErrorWindowTests {
    /// An origin answering `cacheControl` with an ETag and `Age: 100` (so a stored copy is 100 s
    /// stale at once) until `failing` is set, then 503.
    private func origin(cacheControl: String, failing: NIOLockedValueBox<Bool>) async throws -> LoopbackOrigin {
        try await LoopbackOrigin.start { _, respond in
            if failing.withLockedValue({ $0 }) {
                respond.send(status: 503, body: "down for maintenance")
            } else {
                respond.send(status: 200, headers: ["Cache-Control": cacheControl, "ETag": "\"v1\"", "Age": "100"], body: "good")
            }
        }
    }

    private func session(_ fixture: CacheFixture, window: Duration?) -> Session {
        var configuration = SessionConfiguration.ephemeral
        configuration.responseCache = fixture.cache
        if let window {
            configuration.staleIfErrorWindow = { _ in window }
        }
        return Session(configuration: configuration)
    }

    @Test("within the window a 503, and then an origin that is gone, are answered with the stored response")
    func servesStale() async throws {
        let failing = NIOLockedValueBox(false)
        let origin = try await origin(cacheControl: "max-age=0", failing: failing)
        let fixture = try CacheFixture()
        let session = session(fixture, window: .seconds(600))
        _ = try await load(session, Request(url: origin.url("/s")))
        failing.withLockedValue { $0 = true }
        let (on503, body) = try await load(session, Request(url: origin.url("/s")))
        #expect(body == "good")
        #expect(on503.response?.status == 200)
        #expect(on503.cacheOutcome?.detail == "stale-if-error")
        #expect(origin.requestCount == 2, "the revalidation was tried")
        origin.stop()
        try await Task.sleep(for: .milliseconds(50))
        let (down, bodyDown) = try await load(self.session(fixture, window: .seconds(600)), Request(url: origin.url("/s")))
        #expect(bodyDown == "good")
        #expect(down.error == nil)
    }

    @Test("without a window, past it, or against must-revalidate, the 503 reaches the client")
    func errorPassedOn() async throws {
        for (cacheControl, window) in [("max-age=0", nil), ("max-age=0", Duration.seconds(60)), ("max-age=0, must-revalidate", Duration.seconds(600))] {
            let failing = NIOLockedValueBox(false)
            let origin = try await origin(cacheControl: cacheControl, failing: failing)
            defer { origin.stop() }
            let fixture = try CacheFixture()
            let session = session(fixture, window: window)
            _ = try await load(session, Request(url: origin.url("/e")))
            failing.withLockedValue { $0 = true }
            let (task, body) = try await load(session, Request(url: origin.url("/e")))
            #expect(task.response?.status == 503, "\(cacheControl), \(String(describing: window))")
            #expect(body == "down for maintenance")
        }
    }

    @Test("the response's own stale-if-error still counts when it is the larger")
    func responseWindowWins() async throws {
        let failing = NIOLockedValueBox(false)
        let origin = try await origin(cacheControl: "max-age=0, stale-if-error=600", failing: failing)
        defer { origin.stop() }
        let fixture = try CacheFixture()
        let session = session(fixture, window: .seconds(10))
        _ = try await load(session, Request(url: origin.url("/r")))
        failing.withLockedValue { $0 = true }
        let (_, body) = try await load(session, Request(url: origin.url("/r")))
        #expect(body == "good")
    }
}
