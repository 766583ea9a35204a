import NIOCore
import Testing

@testable import TollgateSession

@Suite("connect-to targets: the order they are tried in")
struct ConnectionTargetHealthTests {
    let a = ConnectionTarget(host: "10.0.0.1", port: 80)
    let b = ConnectionTarget(host: "10.0.0.2", port: 80)
    let c = ConnectionTarget(host: "10.0.0.3", port: 80)

    @Test("Each new connection starts at the next target; each origin has its own turn")
    func roundRobin() {
        var health = ConnectionTargetHealth()
        let now = NIODeadline.uptimeNanoseconds(1_000_000_000)
        #expect(health.order([a, b, c], for: "api:80", now: now) == [a, b, c])
        #expect(health.order([a, b, c], for: "api:80", now: now) == [b, c, a])
        #expect(health.order([a, b, c], for: "other:80", now: now) == [a, b, c])
        #expect(health.order([a, b, c], for: "api:80", now: now) == [c, a, b])
        #expect(health.order([a, b, c], for: "api:80", now: now) == [a, b, c])
        #expect(health.order([a], for: "api:80", now: now) == [a])
    }

    @Test("A target that failed goes last for the pause, the others taking turns between them, then takes its turns again")
    func failedGoesLast() {
        var health = ConnectionTargetHealth(failurePause: .seconds(10))
        let now = NIODeadline.uptimeNanoseconds(1_000_000_000)
        health.failed(a, now: now)
        #expect(health.isPaused(a, now: now))
        #expect(health.order([a, b, c], for: "api:80", now: now) == [b, c, a])
        #expect(health.order([a, b, c], for: "api:80", now: now + .seconds(9)) == [c, b, a])
        let later = now + .seconds(10)
        #expect(!health.isPaused(a, now: later))
        #expect(health.order([a, b, c], for: "api:80", now: later) == [c, a, b])
        health.failed(b, now: later)
        health.succeeded(b)
        #expect(health.order([a, b, c], for: "api:80", now: later) == [a, b, c])
    }

    @Test("Turns are counted for a bounded number of hosts: past it they start over")
    func boundedOrigins() {
        var health = ConnectionTargetHealth()
        let now = NIODeadline.uptimeNanoseconds(1_000_000_000)
        #expect(health.order([a, b], for: "host-0:80", now: now) == [a, b])
        #expect(health.order([a, b], for: "host-0:80", now: now) == [b, a])
        for index in 1..<ConnectionTargetHealth.maximumOrigins { _ = health.order([a, b], for: "host-\(index):80", now: now) }
        // host-0 still has its count while the table is full; a new host then starts it over.
        #expect(health.order([a, b], for: "host-0:80", now: now) == [a, b])
        _ = health.order([a, b], for: "one-more:80", now: now)
        #expect(health.order([a, b], for: "host-0:80", now: now) == [a, b])
        #expect(health.order([a, b], for: "host-0:80", now: now) == [b, a])
    }

    @Test("When every target failed lately, all are tried, the one that failed longest ago first")
    func allFailed() {
        var health = ConnectionTargetHealth(failurePause: .seconds(10))
        let now = NIODeadline.uptimeNanoseconds(1_000_000_000)
        health.failed(c, now: now)
        health.failed(a, now: now + .seconds(1))
        health.failed(b, now: now + .seconds(2))
        #expect(health.order([a, b, c], for: "api:80", now: now + .seconds(3)) == [c, a, b])
    }
}
