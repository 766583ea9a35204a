import Foundation
import Testing
import TollgatePolicy
@testable import TollgateProxy
import TollgateTesting

/// `access.rate-limit`: each client address may make `rate` requests a second with `burst` more
/// at once; past it the proxy answers `429 rate-limited` itself.
@Suite("access.rate-limit: requests per client address", .timeLimit(.minutes(1)))
struct RateLimitTests {
    @Test("Past its burst a client gets 429 rate-limited with Retry-After on a connection that stays open; served again once its allowance is back; another address is not limited")
    func limitsOneClient() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "ok") }
        defer { origin.stop() }
        var configuration = PolicyConfiguration()
        configuration.access.rateLimit = .init(requestsPerSecond: 2, burst: 2)
        try await withProxy(configuration: configuration) { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            let request = "GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\n\r\n"
            let started = ContinuousClock.now
            var statuses: [Int] = []
            for count in 1...10 {
                try await client.send(request)
                statuses.append(try #require(try await client.waitForResponses(count).last).status)
            }
            let elapsed = ContinuousClock.now - started
            // Three at once (the rate's one and the burst's two), then one every half second.
            #expect(Array(statuses.prefix(3)) == [200, 200, 200], "\(statuses)")
            let allowedByNow = 3 + Int((Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18) * 2)
            #expect(statuses.filter { $0 == 200 }.count <= allowedByNow, "\(statuses) in \(elapsed)")
            let refused = try #require(client.responses.first { $0.status == 429 }, "\(statuses)")
            #expect(refused.header("Tollgate-Error") == "rate-limited")
            #expect(refused.header("Retry-After") == "1")
            #expect(refused.bodyText.contains("client 127.0.0.1 made more requests than access.rate-limit allows (2/s, burst 2)"), "\(refused.bodyText)")
            #expect(origin.requestCount == statuses.filter { $0 == 200 }.count, "a refused request does not reach the origin")

            // Another client address (127.0.0.2, also loopback) has an allowance of its own.
            let other = try await ChildProcess.run(
                "/usr/bin/curl",
                ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--interface", "127.0.0.2", "-x", "http://127.0.0.1:\(proxy.port)",
                 "http://127.0.0.1:\(origin.port)/other"]
            )
            #expect(other.stdout == "200", "\(other.stderr)")

            // Half a second later one request is allowed again, on the same connection.
            try await Task.sleep(for: .milliseconds(600))
            try await client.send(request)
            #expect(try await client.waitForResponses(11).last?.status == 200)
        }
    }

    @Test("A bucket holds burst + 1, refills at the rate, and says how long until the next token")
    func tokenBucket() {
        let second: UInt64 = 1_000_000_000
        var bucket = TokenBucket(capacity: 3, now: 0)
        #expect(bucket.take(now: 0, rate: 2, capacity: 3) == nil)
        #expect(bucket.take(now: 0, rate: 2, capacity: 3) == nil)
        #expect(bucket.take(now: 0, rate: 2, capacity: 3) == nil)
        #expect(bucket.take(now: 0, rate: 2, capacity: 3) == .milliseconds(500))
        #expect(bucket.take(now: second / 4, rate: 2, capacity: 3) == .milliseconds(250))
        #expect(bucket.take(now: second / 2, rate: 2, capacity: 3) == nil)
        // Never more than capacity, however long it waited.
        #expect(bucket.isFull(now: 100 * second, rate: 2, capacity: 3))
        for _ in 0..<3 { #expect(bucket.take(now: 100 * second, rate: 2, capacity: 3) == nil) }
        #expect(bucket.take(now: 100 * second, rate: 2, capacity: 3) != nil)
    }

    @Test("The table forgets clients whose allowance is whole again once it grows past its bound")
    func tableIsBounded() {
        let limiter = ClientRateLimiter()
        let limit = PolicyConfiguration.Access.RateLimit(requestsPerSecond: 1000, burst: 0)
        for index in 0...ClientRateLimiter.pruneAbove { _ = limiter.admit("10.0.\(index / 256).\(index % 256)", under: limit, now: 0) }
        #expect(limiter.clientCount == ClientRateLimiter.pruneAbove + 1)
        _ = limiter.admit("192.0.2.1", under: limit, now: 1_000_000_000)
        #expect(limiter.clientCount == 1)
    }

    @Test("A flood from more addresses than the bound drops no client still counting, and prunes again only once the table doubled")
    func floodPrunesRarely() {
        let limiter = ClientRateLimiter()
        // A slow rate: no bucket is full again within the flood, so pruning frees nothing.
        let limit = PolicyConfiguration.Access.RateLimit(requestsPerSecond: 0.001, burst: 0)
        let count = ClientRateLimiter.pruneAbove * 3
        for index in 0..<count { _ = limiter.admit("fd00::\(String(index, radix: 16))", under: limit, now: UInt64(index)) }
        #expect(limiter.clientCount == count, "nothing full was dropped, and the table kept every client")
        #expect(limiter.nextPruning > ClientRateLimiter.pruneAbove * 2, "\(limiter.nextPruning)")
        // Its owner is still limited: the first request took its one token.
        #expect(limiter.admit("fd00::0", under: limit, now: UInt64(count)) != nil)
    }
}
