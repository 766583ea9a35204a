import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing
import TollgateHTTP
@testable import TollgateSession
import TollgateTLS
import TollgateTesting

@Suite(
    "HTTP/2 to https origins through the session's pool (nghttpd)",
    .timeLimit(.minutes(2)),
    .enabled(if: NGHTTPDOrigin.isInstalled, "needs nghttpd (Debian nghttp2-server)")
)
struct SessionHTTP2Tests {
    static func session(_ pki: TestPKI, delegate: (any SessionDelegate)? = nil, http2: Bool = true) -> Session {
        var configuration = SessionConfiguration.ephemeral
        let trust = pki.sessionTLSConfiguration
        configuration.tlsConfiguration = { host, port, defaults in
            var chosen = trust(host, port, defaults)
            if !http2 { chosen.applicationProtocols.removeAll { $0 == "h2" } }
            return chosen
        }
        return Session(configuration: configuration, delegate: delegate)
    }

    /// Runs one request to completion with an ``EventRecorder`` as its delegate (for the metrics).
    static func recorded(_ session: Session, _ request: Request) async throws -> EventRecorder {
        let events = EventRecorder()
        let task = try session.dataTask(with: request)
        task.delegate = events
        task.resume()
        try await eventually("task done", timeout: .seconds(30)) { events.completed && events.metrics != nil }
        return events
    }

    static func key(_ port: Int) -> ConnectionKey {
        var key = ConnectionKey(scheme: "https", host: "127.0.0.1", port: port, viaProxy: false)
        key.offersHTTP2 = true
        return key
    }

    @Test("A GET goes over h2; the second request is a second stream of the same connection, reused")
    func getAndReuse() async throws {
        let pki = try TestPKI()
        let origin = try await NGHTTPDOrigin.start(pki: pki, files: ["a.txt": Data("hello over h2\n".utf8)])
        defer { origin.stop() }
        let session = Self.session(pki)
        let (first, firstBody) = try await load(session, Request(url: origin.url("/a.txt")))
        #expect(firstBody == "hello over h2\n")
        #expect(first.response?.status == 200)
        #expect(first.response?.version == "HTTP/2")
        let second = try await Self.recorded(session, Request(url: origin.url("/a.txt")))
        #expect(second.body == "hello over h2\n")
        let secondMetrics = try #require(second.metrics?.transactionMetrics.last)
        #expect(secondMetrics.networkProtocolName == "h2")
        #expect(secondMetrics.isReusedConnection)
        #expect(session.pool.connectionCount(for: Self.key(origin.port)) == 1)
        #expect(origin.sessionCount == 1)
        // A new session: its first stream reports the connection's making, not reuse.
        let fresh = try await Self.recorded(Self.session(pki), Request(url: origin.url("/a.txt")))
        let freshMetrics = try #require(fresh.metrics?.transactionMetrics.last)
        #expect(freshMetrics.networkProtocolName == "h2")
        #expect(!freshMetrics.isReusedConnection)
        #expect(freshMetrics.secureConnectionStartDate != nil)
    }

    @Test("A POST body goes out as DATA frames and comes back (nghttpd echoes uploads)")
    func postBody() async throws {
        let pki = try TestPKI()
        let origin = try await NGHTTPDOrigin.start(pki: pki, files: ["echo": Data("unused".utf8)])
        defer { origin.stop() }
        let session = Self.session(pki)
        let payload = String(repeating: "0123456789abcdef", count: 20_000)  // 320 kB: several windows
        var request = Request(url: origin.url("/echo"))
        request.method = .post
        request.body = .bytes(ByteBuffer(string: payload))
        let (task, body) = try await load(session, request)
        #expect(task.response?.status == 200)
        #expect(body.count == payload.count)
        #expect(body == payload)
    }

    @Test("Twenty tasks at once to a new origin share ONE connection as concurrent streams")
    func manyTasksOneConnection() async throws {
        let pki = try TestPKI()
        let origin = try await NGHTTPDOrigin.start(pki: pki, files: ["m.txt": Data(repeating: UInt8(ascii: "m"), count: 50_000)])
        defer { origin.stop() }
        let session = Self.session(pki)
        let recorders = (0..<20).map { _ in EventRecorder() }
        for events in recorders {
            let task = try session.dataTask(with: Request(url: origin.url("/m.txt")))
            task.delegate = events
            task.resume()
        }
        try await eventually("all twenty done", timeout: .seconds(30)) {
            recorders.allSatisfy { $0.completed && $0.metrics != nil }
        }
        #expect(recorders.map(\.bodyCount) == Array(repeating: 50_000, count: 20))
        #expect(recorders.allSatisfy { $0.error == nil })
        #expect(session.connectionsStarted == 1)
        #expect(origin.sessionCount == 1)
        let transactions = recorders.compactMap { $0.metrics?.transactionMetrics.last }
        #expect(transactions.filter { !$0.isReusedConnection }.count == 1)
        #expect(transactions.allSatisfy { $0.networkProtocolName == "h2" })
    }

    @Test("A suspended task holds back its own stream (flow control) while another stream of the connection runs; resumed, it gets every byte")
    func suspendedStream() async throws {
        let pki = try TestPKI()
        let size = 4 * 1024 * 1024
        let origin = try await NGHTTPDOrigin.start(
            pki: pki,
            files: ["big": Data(repeating: UInt8(ascii: "b"), count: size), "small": Data("small".utf8)]
        )
        defer { origin.stop() }
        let session = Self.session(pki)
        let events = EventRecorder()
        let suspended = NIOLockedValueBox(false)
        events.onData = { task, _ in
            let first = suspended.withLockedValue { done in
                defer { done = true }
                return !done
            }
            if first { task.suspend() }
        }
        let big = try session.dataTask(with: Request(url: origin.url("/big")))
        big.delegate = events
        big.resume()
        try await eventually("suspended") { suspended.withLockedValue { $0 } }
        try await Task.sleep(for: .milliseconds(500))
        let heldAt = events.bodyCount
        // Another stream of the same connection is not held back.
        let (_, small) = try await load(session, Request(url: origin.url("/small")))
        #expect(small == "small")
        try await Task.sleep(for: .milliseconds(300))
        #expect(events.bodyCount == heldAt)
        #expect(heldAt < size / 2)
        #expect(!events.completed)
        big.resume()
        try await eventually("big done", timeout: .seconds(30)) { events.completed }
        #expect(events.error == nil)
        #expect(events.bodyCount == size)
        #expect(origin.sessionCount == 1)
    }

    @Test("A cacheable h2 response is stored on the miss and served from the cache on the next request")
    func cacheHitAfterMiss() async throws {
        let pki = try TestPKI()
        let origin = try await NGHTTPDOrigin.start(pki: pki, files: ["c.txt": Data("cached over h2".utf8)])
        defer { origin.stop() }
        // Modified a year ago: heuristically fresh (nghttpd sends Last-Modified, no Cache-Control).
        let file = origin.directory.appendingPathComponent("root/c.txt").path
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -365 * 86400)], ofItemAtPath: file)
        let fixture = try CacheFixture()
        var configuration = SessionConfiguration.ephemeral
        configuration.responseCache = fixture.cache
        configuration.tlsConfiguration = pki.sessionTLSConfiguration
        let session = Session(configuration: configuration)
        let (miss, missBody) = try await load(session, Request(url: origin.url("/c.txt")))
        #expect(missBody == "cached over h2")
        #expect(miss.cacheOutcome?.cacheStatus().contains("stored") == true)
        let (hit, hitBody) = try await load(session, Request(url: origin.url("/c.txt")))
        #expect(hitBody == "cached over h2")
        #expect(hit.cacheOutcome?.cacheStatus() == "tollgate; hit")
        #expect(origin.process.standardOutput.components(separatedBy: "recv HEADERS").count - 1 == 1)
    }

    @Test("A pin mismatch fails the task with the same error as on HTTP/1.1, and no stream is opened")
    func pinMismatch() async throws {
        let pki = try TestPKI()
        let origin = try await NGHTTPDOrigin.start(pki: pki, files: ["p": Data("pinned".utf8)])
        defer { origin.stop() }
        let pinning = TrustRecorder { _ in .cancelAuthenticationChallenge(reason: SessionError(.pinMismatch, nil, "wrong pin")) }
        let session = Self.session(pki, delegate: pinning)
        await #expect(throws: SessionError(.pinMismatch)) {
            _ = try await session.data(for: Request(url: origin.url("/p")))
        }
        #expect(!origin.process.standardOutput.contains("recv HEADERS"))
    }

    @Test("With h2 taken out of the offer (http2: off), the h2-only nghttpd refuses the connection: a clear TLS failure")
    func http2Off() async throws {
        let pki = try TestPKI()
        let origin = try await NGHTTPDOrigin.start(pki: pki, files: ["o": Data("off".utf8)])
        defer { origin.stop() }
        let session = Self.session(pki, http2: false)
        let error = await #expect(throws: SessionError.self) {
            _ = try await session.data(for: Request(url: origin.url("/o")))
        }
        #expect(error?.code == .secureConnectionFailed || error?.code == .networkConnectionLost)
        #expect(!origin.process.standardOutput.contains("recv HEADERS"))
    }
}

@Suite("HTTP/2 fallback: a TLS origin that does not choose h2", .timeLimit(.minutes(1)))
struct SessionHTTP2FallbackTests {
    @Test("An https origin offering only http/1.1 is spoken to in HTTP/1.1, its connection leased whole")
    func fallback() async throws {
        let pki = try TestPKI()
        var tls = pki.serverConfiguration
        tls.applicationProtocols = ["http/1.1"]
        let origin = try await LoopbackOrigin.start(tls: tls) { _, respond in respond.send(status: 200, body: "one-one") }
        defer { origin.stop() }
        let session = SessionHTTP2Tests.session(pki)
        let first = try await SessionHTTP2Tests.recorded(session, Request(url: origin.url("/f")))
        #expect(first.body == "one-one")
        #expect(first.metrics?.transactionMetrics.last?.networkProtocolName == "http/1.1")
        let again = try await SessionHTTP2Tests.recorded(session, Request(url: origin.url("/f")))
        #expect(again.metrics?.transactionMetrics.last?.networkProtocolName == "http/1.1")
        #expect(again.metrics?.transactionMetrics.last?.isReusedConnection == true)
        #expect(origin.connectionCount == 1)
    }

    @Test("http2 off against an origin offering both h2 and http/1.1: the connection is http/1.1, which the origin speaks")
    func offAgainstBoth() async throws {
        let pki = try TestPKI()
        var tls = pki.serverConfiguration
        tls.applicationProtocols = ["h2", "http/1.1"]
        let origin = try await LoopbackOrigin.start(tls: tls) { _, respond in respond.send(status: 200, body: "kept 1.1") }
        defer { origin.stop() }
        let off = try await SessionHTTP2Tests.recorded(SessionHTTP2Tests.session(pki, http2: false), Request(url: origin.url("/b")))
        #expect(off.body == "kept 1.1")
        #expect(off.metrics?.transactionMetrics.last?.networkProtocolName == "http/1.1")
        // With h2 offered, this origin picks it and then cannot speak it (it is HTTP/1.1 only):
        // the offer is what differs.
        let auto = try await SessionHTTP2Tests.recorded(SessionHTTP2Tests.session(pki), Request(url: origin.url("/b")))
        #expect(auto.error != nil)
        #expect(auto.body != "kept 1.1")
    }
}
