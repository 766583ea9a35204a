import Foundation
import Glibc
import NIOConcurrencyHelpers
import NIOCore
import Testing
import TollgateHTTP
import TollgateTesting

@testable import TollgateSession

/// ``SessionConfiguration/connectionTargets``: a host's connections go to other addresses, in
/// turn, passing over one that refuses, while the request keeps its URL.
@Suite("connect-to: a host's connections made to other targets", .timeLimit(.minutes(1)))
struct ConnectionTargetsTests {
    @Test("Requests for a name that does not resolve reach the targets in turn with the URL's Host; a target that refuses is passed over and then left out of the turns")
    func targetsInTurn() async throws {
        let a = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, headers: ["Connection": "close"], body: "A \(request.headerFields[.host] ?? "-")")
        }
        defer { a.stop() }
        let b = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, headers: ["Connection": "close"], body: "B \(request.headerFields[.host] ?? "-")")
        }
        defer { b.stop() }
        let refusing = ClosedPort().port
        let targets = [
            ConnectionTarget(host: "127.0.0.1", port: a.port), ConnectionTarget(host: "127.0.0.1", port: b.port),
            ConnectionTarget(host: "127.0.0.1", port: refusing),
        ]
        var configuration = SessionConfiguration.ephemeral
        configuration.connectionTargets = { host, _ in host == "api.test" ? targets : [] }
        let session = Session(configuration: configuration)
        defer { session.invalidateAndCancel() }
        let url = try #require(HTTPURL(string: "http://api.test:8080/x"))

        var bodies: [String] = []
        for _ in 0..<6 {
            let (task, body) = try await load(session, Request(url: url))
            #expect(task.response?.status == 200)
            bodies.append(body)
        }
        // The third connection's turn starts at the refusing target: it is passed over for A, and
        // then left out of the turns (A and B alternate).
        #expect(bodies == ["A api.test:8080", "B api.test:8080", "A api.test:8080", "B api.test:8080", "A api.test:8080", "B api.test:8080"])
        #expect(session.pool.targetHealth.withLockedValue { $0.isPaused(targets[2], now: .now()) })
        // Other hosts connect to themselves: this one does not resolve.
        let (other, _) = try await load(session, Request(url: try #require(HTTPURL(string: "http://other.test:8080/x"))))
        #expect(other.error?.code == .cannotFindHost)
    }

    @Test("When no target can be reached the task fails with cannotConnectToHost naming each target and why")
    func noTargetReached() async throws {
        let first = ClosedPort().port
        let second = ClosedPort().port
        var configuration = SessionConfiguration.ephemeral
        configuration.connectionTargets = { _, _ in
            [ConnectionTarget(host: "127.0.0.1", port: first), ConnectionTarget(host: "127.0.0.1", port: second)]
        }
        let session = Session(configuration: configuration)
        defer { session.invalidateAndCancel() }
        let (task, _) = try await load(session, Request(url: try #require(HTTPURL(string: "http://api.test/x"))))
        let error = try #require(task.error)
        #expect(error.code == .cannotConnectToHost)
        #expect(error.detail.contains("no connect-to target could be reached"), "\(error.detail)")
        #expect(error.detail.contains("127.0.0.1:\(first): ") && error.detail.contains("127.0.0.1:\(second): "), "\(error.detail)")
        #expect(error.detail.contains("refused"), "\(error.detail)")
    }

    @Test("A target that does not answer is given up after 3 s while another is left, and goes last")
    func unansweringTarget() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, headers: ["Connection": "close"], body: "up") }
        defer { origin.stop() }
        let down = try UnansweringListener()
        let targets = [ConnectionTarget(host: "127.0.0.1", port: down.port), ConnectionTarget(host: "127.0.0.1", port: origin.port)]
        var configuration = SessionConfiguration.ephemeral
        configuration.connectionTargets = { _, _ in targets }
        let session = Session(configuration: configuration)
        defer { session.invalidateAndCancel() }
        let url = try #require(HTTPURL(string: "http://api.test/x"))

        let started = ContinuousClock.now
        let (first, body) = try await load(session, Request(url: url))
        let waited = ContinuousClock.now - started
        #expect(first.response?.status == 200)
        #expect(body == "up")
        #expect(waited >= .milliseconds(2900) && waited < .seconds(8), "\(waited)")
        // Its next turn is passed over at once.
        let again = ContinuousClock.now
        let (second, _) = try await load(session, Request(url: url))
        #expect(second.response?.status == 200)
        #expect(ContinuousClock.now - again < .seconds(2))
        withExtendedLifetime(down) {}
    }

    @Test("A GET whose new connection to a target is lost before the response is sent once more, to another target; a POST is not")
    func lostConnectionGoesToAnotherTarget() async throws {
        // Reads the request, then closes without an answer (a backend that crashed on it).
        let crashing = try await LoopbackOrigin.start { _, respond in respond.close() }
        defer { crashing.stop() }
        let good = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, headers: ["Connection": "close"], body: "good \(request.method)")
        }
        defer { good.stop() }
        let targets = [ConnectionTarget(host: "127.0.0.1", port: crashing.port), ConnectionTarget(host: "127.0.0.1", port: good.port)]
        var configuration = SessionConfiguration.ephemeral
        configuration.connectionTargets = { _, _ in targets }
        let session = Session(configuration: configuration)
        defer { session.invalidateAndCancel() }
        let url = try #require(HTTPURL(string: "http://api.test/x"))

        let (get, body) = try await load(session, Request(url: url))
        #expect(get.error == nil, "\(get.error.map { "\($0)" } ?? "")")
        #expect(body == "good GET")
        #expect(crashing.requests.count == 1)
        #expect(session.pool.targetHealth.withLockedValue { $0.isPaused(targets[0], now: .now()) })

        // With the crashing target back in its turn, a POST it loses is the task's error.
        session.pool.targetHealth.withLockedValue { $0.succeeded(targets[0]) }
        var post: DataTask?
        for _ in 0..<2 {
            let (task, _) = try await load(session, Request(method: .post, url: url, body: .bytes(ByteBuffer(string: "x"))))
            if crashing.requests.count == 2 {
                post = task
                break
            }
        }
        let lost = try #require(post, "a POST reached the crashing target")
        #expect(lost.error?.code == .networkConnectionLost)
        #expect(good.requests.filter { $0.method == "POST" }.count <= 1)
    }

    @Test("A stream task for the host connects to its targets too")
    func streamTaskUsesTargets() async throws {
        let echo = try await LoopbackEchoServer.start()
        defer { echo.stop() }
        var configuration = SessionConfiguration.ephemeral
        configuration.connectionTargets = { host, _ in host == "echo.test" ? [ConnectionTarget(host: "127.0.0.1", port: echo.port)] : [] }
        let session = Session(configuration: configuration)
        defer { session.invalidateAndCancel() }
        let task = try session.streamTask(withHostName: "echo.test", port: 7)
        task.resume()
        try await task.write(ByteBuffer(string: "ping"), timeout: .seconds(5))
        let (data, _) = try await task.readData(ofMinLength: 4, maxLength: 4, timeout: .seconds(5))
        #expect(data.map { String(buffer: $0) } == "ping")
        task.cancel()
    }
}

/// A listening socket that completes no more connections: its accept queue (backlog 0) is held
/// full by connections nobody accepts, so the kernel drops every further SYN and a connect to it
/// waits, as to a machine that is down.
private final class UnansweringListener {
    let port: Int
    private var descriptors: [Int32] = []

    init() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw POSIXError(.EMFILE) }
        descriptors.append(listener)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(listener, pointer, length) == 0 && listen(listener, 0) == 0 && getsockname(listener, pointer, &length) == 0
            }
        }
        guard bound else { throw POSIXError(.EADDRINUSE) }
        port = Int(UInt16(bigEndian: address.sin_port))
        // Fill the queue: connections the kernel completes and nobody accepts.
        for _ in 0..<2 {
            let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            descriptors.append(client)
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        usleep(100_000)
    }

    deinit { for descriptor in descriptors { close(descriptor) } }
}
