import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
import TollgateHTTP
import TollgateTesting

@testable import TollgateSession

/// A health check's probe (``ConnectionPool/probe(_:at:timeout:trust:on:)``) over plain HTTP: the
/// request it sends, and each way it fails; and the checker putting a target last by it.
@Suite("connect-to-check probes: an HTTP request to a target and what passes", .timeLimit(.minutes(1)))
struct ConnectionTargetProbeTests {
    private static func origin() async throws -> LoopbackOrigin {
        try await LoopbackOrigin.start { request, respond in
            switch request.target {
            case "/ok": respond.send(status: 204, headers: [:], body: "")
            case "/fail": respond.send(status: 500, headers: [:], body: "broken")
            case "/slow": break  // never answers
            case "/late": DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) { respond.send(status: 204, headers: [:], body: "") }
            default: respond.send(status: 404, headers: [:], body: "")
            }
        }
    }

    private func run(_ path: String, expecting: ClosedRange<Int> = 200...399, on session: Session, at target: ConnectionTarget) async -> Result<Void, any Error> {
        let probe = ConnectionTargetProbe(host: "web.test", tls: false, request: .init(method: .get, path: path, expectedStatuses: expecting))
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let future = ConnectionPool.probe(
            probe, at: target, timeout: .milliseconds(500), trust: { _, _, _, decided in decided(nil) },
            configuration: session.pool.configuration, resolver: session.pool.resolver, on: loop
        )
        do {
            try await future.get()
            return .success(())
        } catch {
            return .failure(error)
        }
    }

    @Test("A check answered after 300 ms fails within its 100 ms interval, and passes with a timeout of 1 s of its own")
    func checkTimeout() async throws {
        let origin = try await Self.origin()
        defer { origin.stop() }
        let (hurried, target) = checkedSession(origin, asking: CheckedPath("/late"))
        try await eventually("down: no answer within the interval") {
            hurried.pool.targetHealth.withLockedValue { $0.lastCheck[target] == "no answer within 100 ms" }
        }
        hurried.invalidateAndCancel()
        let (patient, sameTarget) = checkedSession(origin, asking: CheckedPath("/late"), timeout: .seconds(1))
        defer { patient.invalidateAndCancel() }
        try await eventually("a check passed") { patient.pool.targetHealth.withLockedValue { $0.lastCheck[sameTarget] == "ok" } }
        #expect(patient.pool.targetHealth.withLockedValue { !$0.isPaused(sameTarget, now: .now()) })
    }

    /// A session whose one `connect-to` target is `origin`, checked every 100 ms with a GET of
    /// `path` (read at each check), `fall` and `rise` as given.
    private func checkedSession(
        _ origin: LoopbackOrigin, asking path: CheckedPath, fall: Int = 1, rise: Int = 1, timeout: Duration? = nil
    ) -> (Session, ConnectionTarget) {
        let target = ConnectionTarget(host: "127.0.0.1", port: origin.port)
        var configuration = SessionConfiguration.ephemeral
        configuration.connectionTargets = { _, _ in [target] }
        configuration.connectionTargetChecks = {
            [ConnectionTargetCheck(
                target: target, interval: .milliseconds(100),
                probe: ConnectionTargetProbe(host: "web.test", tls: false, request: .init(path: path.value)), fall: fall, rise: rise,
                timeout: timeout
            )]
        }
        return (Session(configuration: configuration), target)
    }

    private func failure(_ result: Result<Void, any Error>) -> String? {
        if case .failure(let error) = result { return "\(error)" }
        return nil
    }

    @Test("It asks GET PATH with the checked name as Host, closing; an expected status passes, another fails naming it; no answer in time, and a refused connection, fail")
    func probeOutcomes() async throws {
        let origin = try await Self.origin()
        defer { origin.stop() }
        let session = Session(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let target = ConnectionTarget(host: "127.0.0.1", port: origin.port)

        #expect(failure(await run("/ok", on: session, at: target)) == nil)
        let sent = try #require(origin.requests.first)
        #expect(sent.method == "GET" && sent.target == "/ok")
        #expect(sent.headerFields[.host] == "web.test")
        #expect(sent.headerFields[.connection] == "close")
        #expect(sent.headerFields[.userAgent] == "tollgate-health-check")

        #expect(failure(await run("/fail", on: session, at: target)) == "GET /fail answered 500")
        #expect(failure(await run("/fail", expecting: 500...500, on: session, at: target)) == nil)
        #expect(failure(await run("/ok", expecting: 200...200, on: session, at: target)) == "GET /ok answered 204")
        #expect(failure(await run("/slow", on: session, at: target)) == "no answer within 500 ms")
        let refused = failure(await run("/ok", on: session, at: ConnectionTarget(host: "127.0.0.1", port: ClosedPort().port)))
        #expect(refused?.contains("Connection refused") == true, "\(refused ?? "passed")")
    }

    @Test("A check's request carries the headers it is given (a User-Agent of its own replaces the check's), after Host")
    func checkHeaders() async throws {
        let origin = try await Self.origin()
        defer { origin.stop() }
        var configuration = SessionConfiguration.ephemeral
        configuration.connectionTargets = { _, _ in [] }
        let session = Session(configuration: configuration)
        defer { session.invalidateAndCancel() }
        let target = ConnectionTarget(host: "127.0.0.1", port: origin.port)
        for (fields, agent) in [(["X-Health-Token": "s3cret"] as HeaderFields, "tollgate-health-check"), (["User-Agent": "lb/2"], "lb/2")] {
            let probe = ConnectionTargetProbe(host: "web.test", tls: false, request: .init(path: "/ok", headerFields: fields))
            try await ConnectionPool.probe(
                probe, at: target, timeout: .milliseconds(500), trust: { _, _, _, decided in decided(nil) },
                configuration: session.pool.configuration, resolver: session.pool.resolver, on: MultiThreadedEventLoopGroup.singleton.next()
            ).get()
            let asked = try #require(origin.requests.last)
            #expect(asked.headerFields["User-Agent"] == agent && asked.headerFields["Connection"] == "close" && asked.headerFields["Host"] == "web.test")
            for field in fields { #expect(asked.headerFields[field.name] == field.value) }
        }
        let summary = ConnectionTargetProbe(host: "web.test", tls: false, request: .init(path: "/ok", headerFields: ["X-Health-Token": "s3cret"])).summary
        #expect(summary == "GET /ok (Host web.test, X-Health-Token) answered 200-399", "names, never values: \(summary)")
    }

    @Test("The checker puts a target whose check fails last, though it accepts connections, and says why")
    func checkerPutsFailingTargetLast() async throws {
        let origin = try await Self.origin()
        defer { origin.stop() }
        let path = CheckedPath("/fail")
        let (session, target) = checkedSession(origin, asking: path)
        defer { session.invalidateAndCancel() }
        try await eventually("the target is down by its check") {
            session.pool.targetHealth.withLockedValue { $0.isPaused(target, now: .now()) && $0.lastCheck[target] == "GET /fail answered 500" }
        }
        path.value = "/ok"
        try await eventually("the target is back once its check passes") {
            session.pool.targetHealth.withLockedValue { !$0.isPaused(target, now: .now()) && $0.lastCheck[target] == "ok" }
        }
    }

    @Test("With fall 3 and rise 2 the checker takes a target out at its third failed check in a row and back at its second passed")
    func fallAndRise() async throws {
        let origin = try await Self.origin()
        defer { origin.stop() }
        let path = CheckedPath("/fail")
        // A check that times out fails without reaching the origin, and the count below goes by
        // the origin's requests: under TSan a 100 ms check did (2 requests when it was out).
        let (session, target) = checkedSession(origin, asking: path, fall: 3, rise: 2, timeout: .seconds(10))
        defer { session.invalidateAndCancel() }
        let checks = { (asked: String) in origin.requests.filter { $0.target == asked }.count }
        try await eventually("the target is down by its checks") {
            session.pool.targetHealth.withLockedValue { $0.isPaused(target, now: .now()) }
        }
        // Read after the state: the checks counted are at least those that took it out.
        #expect(checks("/fail") >= 3, "out after \(checks("/fail")) failed checks")
        path.value = "/ok"
        try await eventually("the target is back once checks pass") {
            session.pool.targetHealth.withLockedValue { !$0.isPaused(target, now: .now()) }
        }
        #expect(checks("/ok") >= 2, "back after \(checks("/ok")) passed checks")
    }
}

/// The path a check asks for, changed while the checker runs.
private final class CheckedPath: Sendable {
    private let box: NIOLockedValueBox<String>
    init(_ value: String) { box = NIOLockedValueBox(value) }
    var value: String {
        get { box.withLockedValue { $0 } }
        set { box.withLockedValue { $0 = newValue } }
    }
}
