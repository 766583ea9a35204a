import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
import TollgateHTTP
@testable import TollgateSession
import TollgateTesting

@Suite("Connection pool with real connections", .timeLimit(.minutes(1)))
struct SessionPoolTests {
    @Test("Sequential requests reuse one keep-alive connection, and metrics say so")
    func reuse() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "ok") }
        defer { origin.stop() }
        let recorder = EventRecorder()
        let session = Session(configuration: .ephemeral, delegate: recorder)
        var reused: [Bool] = []
        for _ in 0..<3 {
            let task = try session.dataTask(with: Request(url: origin.url()))
            let before = recorder.events.count
            task.resume()
            try await eventually("done") { recorder.events.count >= before + 3 }
            reused.append(recorder.metrics?.transactionMetrics.last?.isReusedConnection ?? false)
        }
        #expect(origin.connectionCount == 1)
        #expect(reused == [false, true, true])
    }

    @Test("No more connections per host than the limit, even with many tasks")
    func limit() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.after(.milliseconds(50)) { respond.send(status: 200, body: "ok") }
        }
        defer { origin.stop() }
        var configuration = SessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = 2
        let session = Session(configuration: configuration)
        let tasks = try (0..<8).map { _ in try session.dataTask(with: Request(url: origin.url())) { _, _, _ in } }
        tasks.forEach { $0.resume() }
        try await eventually("all done") { tasks.allSatisfy { $0.state == .completed } }
        #expect(tasks.allSatisfy { $0.error == nil })
        #expect(origin.requestCount == 8)
        #expect(origin.connectionCount == 2)
    }

    @Test("Tasks waiting for a connection are served by priority")
    func priority() async throws {
        // The first request holds the only connection until every other task has queued up (the
        // test answers it), however long that takes on a busy machine.
        let heldFirst = NIOLockedValueBox<OriginResponder?>(nil)
        let origin = try await LoopbackOrigin.start { request, respond in
            if request.path == "/first" {
                heldFirst.withLockedValue { $0 = respond }
            } else {
                respond.send(status: 200, body: "ok")
            }
        }
        defer { origin.stop() }
        var configuration = SessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = 1
        // A loop of its own: other tests running in parallel cannot delay when tasks queue up.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { group.shutdownGracefully { _ in } }
        let session = Session(configuration: configuration, eventLoopGroup: group)
        let first = try session.dataTask(with: Request(url: origin.url("/first"))) { _, _, _ in }
        first.resume()
        try await eventually("first sent") { origin.requestCount == 1 }
        let priorities: [(String, Float)] = [("/low", 0.1), ("/high2", 0.8), ("/mid", 0.5), ("/high", 0.9)]
        var tasks: [SessionTask] = []
        for (path, priority) in priorities {
            let task = try session.dataTask(with: Request(url: origin.url(path))) { _, _, _ in }
            task.priority = priority
            task.resume()
            tasks.append(task)
            try await Task.sleep(for: .milliseconds(20))
        }
        // Each resume goes to the session's loop ahead of the first response, so all are queued by
        // the time it arrives; the pause only lets the hops land before the answer is sent.
        try await Task.sleep(for: .milliseconds(200))
        #expect(origin.requestCount == 1)
        try #require(heldFirst.withLockedValue { $0 }).send(status: 200, body: "ok")
        try await eventually("all done") { tasks.allSatisfy { $0.state == .completed } }
        #expect(origin.requests.map(\.path) == ["/first", "/high", "/high2", "/mid", "/low"])
    }

    @Test("A connection the origin closes is not reused")
    func closedNotReused() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.send(status: 200, headers: ["Connection": "close"], body: "bye")
            respond.close()
        }
        defer { origin.stop() }
        let session = Session(configuration: .ephemeral)
        for _ in 0..<3 {
            let (body, _) = try await session.data(for: Request(url: origin.url()))
            #expect(String(buffer: body) == "bye")
        }
        #expect(origin.connectionCount == 3)
    }

    @Test("An idempotent request on a reused connection the server dropped is retried once on a new one")
    func retryIdempotent() async throws {
        // The origin answers the first request on each connection and silently drops the second.
        let origin = try await LoopbackOrigin.start { request, respond in
            if request.requestNumberOnConnection == 1 {
                respond.send(status: 200, body: "fresh \(request.connectionNumber)")
            } else {
                respond.close()
            }
        }
        defer { origin.stop() }
        let session = Session(configuration: .ephemeral)
        _ = try await session.data(for: Request(url: origin.url("/a")))
        let (body, _) = try await session.data(for: Request(url: origin.url("/b")))
        #expect(String(buffer: body) == "fresh 2")
        #expect(origin.connectionCount == 2)

        // POST is not idempotent: it fails instead of being sent twice.
        let post = Request(method: .post, url: origin.url("/c"), body: .string("once"))
        await #expect(throws: SessionError.self) { _ = try await session.data(for: post) }
        #expect(origin.requests.filter { $0.path == "/c" }.count == 1)
    }

    @Test("flush makes later requests use a new connection")
    func flushRetires() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "ok") }
        defer { origin.stop() }
        let session = Session(configuration: .ephemeral)
        _ = try await session.data(for: Request(url: origin.url()))
        session.flush()
        _ = try await session.data(for: Request(url: origin.url()))
        #expect(origin.connectionCount == 2)
    }
}

@Suite("Idle connections", .timeLimit(.minutes(1)))
struct SessionIdleConnectionTests {
    @Test("An idle connection is closed after the idle timeout")
    func idleTimeoutCloses() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "ok") }
        defer { origin.stop() }
        var configuration = SessionConfiguration.ephemeral
        configuration.connectionIdleTimeout = .seconds(1)
        let session = Session(configuration: configuration)
        let started = ContinuousClock.now
        _ = try await session.data(for: Request(url: origin.url()))
        if ContinuousClock.now - started < .milliseconds(800) { #expect(origin.openConnectionCount == 1) }
        try await eventually("idle connection closed") { origin.openConnectionCount == 0 }
    }

    @Test("The idle timeout counts from the last use: a connection used again stays for another one")
    func idleTimeoutFromLastUse() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "ok") }
        defer { origin.stop() }
        var configuration = SessionConfiguration.ephemeral
        configuration.connectionIdleTimeout = .milliseconds(1500)
        let session = Session(configuration: configuration)
        let firstUse = ContinuousClock.now
        _ = try await session.data(for: Request(url: origin.url()))
        try await Task.sleep(for: .milliseconds(500))
        let reused = ContinuousClock.now
        _ = try await session.data(for: Request(url: origin.url()))
        // Only judged when the second use came in time (a busy machine may oversleep).
        if reused - firstUse < .milliseconds(1300) {
            #expect(origin.connectionCount == 1)
            // Past the first use's deadline, inside the second's: still open, and still the one.
            try await Task.sleep(until: firstUse + .milliseconds(1700), clock: .continuous)
            if ContinuousClock.now - reused < .milliseconds(1400) { #expect(origin.openConnectionCount == 1) }
        }
        try await eventually("idle connection closed") { origin.openConnectionCount == 0 }
        #expect(ContinuousClock.now - reused >= .milliseconds(1500))
    }

    @Test("An idle connection the server closed is never handed to the next request")
    func serverClosedIdle() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.send(status: 200, body: "ok")
            respond.after(.milliseconds(50)) { respond.close() }
        }
        defer { origin.stop() }
        let session = Session(configuration: .ephemeral)
        _ = try await session.data(for: Request(url: origin.url()))
        let key = ConnectionKey(scheme: "http", host: "127.0.0.1", port: origin.port, viaProxy: false)
        try await eventually("the session noticed the close") { session.pool.connectionCount(for: key) == 0 }
        // POST is never retried, so this only succeeds if the dead connection was not used.
        let (body, _) = try await session.data(for: Request(method: .post, url: origin.url(), body: .string("x")))
        #expect(String(buffer: body) == "ok")
        #expect(origin.connectionCount == 2)
    }
}
