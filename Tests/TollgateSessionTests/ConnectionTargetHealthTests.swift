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

    @Test("Weights: each target's turns in a round as many as its weight, spread out; equal weights turn as before")
    func weights() {
        #expect(ConnectionTargetHealth.smoothRound([5, 1, 1]) == [0, 0, 1, 0, 2, 0, 0])
        #expect(ConnectionTargetHealth.smoothRound([1, 1, 1]) == [0, 1, 2])
        var health = ConnectionTargetHealth()
        let now = NIODeadline.uptimeNanoseconds(1_000_000_000)
        let heavy = ConnectionTarget(host: "10.0.0.1", port: 80, weight: 3)
        var firsts: [ConnectionTarget] = []
        for _ in 0..<8 { firsts.append(health.order([heavy, b], for: "api:80", now: now)[0]) }
        #expect(firsts == [heavy, heavy, b, heavy, heavy, heavy, b, heavy], "\(firsts)")
        // The rest follow in their order: the walk's fallbacks.
        #expect(health.order([heavy, b, c], for: "other:80", now: now) == [heavy, b, c])
        // A paused target's turns go to the others by their weights.
        health.failed(heavy, now: now)
        #expect(health.order([heavy, b, c], for: "third:80", now: now) == [b, c, heavy])
    }

    @Test("A backup comes after every other target that may be tried, and first once they are all paused")
    func backups() {
        var health = ConnectionTargetHealth(failurePause: .seconds(10))
        let now = NIODeadline.uptimeNanoseconds(1_000_000_000)
        let backup = ConnectionTarget(host: "10.0.0.3", port: 80, isBackup: true)
        #expect(health.order([a, backup, b], for: "api:80", now: now) == [a, b, backup])
        #expect(health.order([a, backup, b], for: "api:80", now: now) == [b, a, backup])
        health.failed(a, now: now)
        #expect(health.order([a, backup, b], for: "api:80", now: now) == [b, backup, a])
        health.failed(b, now: now + .seconds(1))
        #expect(health.order([a, backup, b], for: "api:80", now: now + .seconds(1)) == [backup, a, b])
        // Back once the pause is over.
        #expect(health.order([a, backup, b], for: "api:80", now: now + .seconds(12))[0] != backup)
        // Equal whatever their weight or role: one health record per address.
        #expect(ConnectionTarget(host: "10.0.0.3", port: 80) == backup)
        #expect(backup.ruleDescription == "10.0.0.3:80 backup")
        #expect(ConnectionTarget(host: "::1", port: 8443, weight: 4).ruleDescription == "[::1]:8443 weight=4")
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

    @Test("A target a health check found down goes last until a check passes: neither the pause running out nor a request's connection takes it back")
    func downByCheckUntilACheckPasses() {
        var health = ConnectionTargetHealth(failurePause: .seconds(10))
        let now = NIODeadline.uptimeNanoseconds(1_000_000_000)
        let first = health.checkFailed(b, why: "GET /healthz answered 503", now: now)
        #expect(first, "it was taking its turns: the moment to say so")
        let second = health.checkFailed(b, why: "GET /healthz answered 503", now: now + .seconds(1))
        #expect(!second, "said once")
        #expect(health.lastCheck[b] == "GET /healthz answered 503")
        let later = now + .seconds(60)
        #expect(health.isPaused(b, now: later))
        #expect(health.order([a, b, c], for: "api:80", now: later) == [a, c, b])
        let connected = health.succeeded(b)
        #expect(!connected, "a connection made to it is not a check: it stays down, and is not said to be back")
        #expect(health.isPaused(b, now: later))
        // Checks passing and failing for others do not touch it.
        health.checkPassed(a, now: later)
        #expect(health.isPaused(b, now: later))
        let back = health.checkPassed(b, now: later)
        #expect(back, "back: the moment to say so")
        #expect(health.lastCheck[b] == "ok")
        #expect(!health.isPaused(b, now: later))
        #expect(health.order([a, b, c], for: "api:80", now: later) == [b, c, a])
    }

    @Test("A check that passes also ends a request's pause; all down by checks are tried, the one that failed longest ago first")
    func checksAndPauses() {
        var health = ConnectionTargetHealth(failurePause: .seconds(10))
        let now = NIODeadline.uptimeNanoseconds(1_000_000_000)
        health.failed(a, now: now)
        let passed = health.checkPassed(a, now: now + .seconds(1))
        #expect(passed)
        #expect(!health.isPaused(a, now: now + .seconds(1)))
        health.checkFailed(c, why: "x", now: now + .seconds(2))
        health.checkFailed(a, why: "x", now: now + .seconds(3))
        health.failed(b, now: now + .seconds(4))
        #expect(health.order([a, b, c], for: "api:80", now: now + .seconds(5)) == [c, a, b])
    }

    @Test("What checks found of targets no longer checked is forgotten (a reload took their checks out)")
    func forgetsUncheckedTargets() {
        var health = ConnectionTargetHealth()
        let now = NIODeadline.uptimeNanoseconds(1_000_000_000)
        health.checkFailed(a, why: "refused", now: now)
        health.checkFailed(b, why: "refused", now: now)
        health.keepChecks(of: [b])
        #expect(!health.isPaused(a, now: now))
        #expect(health.lastCheck[a] == nil)
        #expect(health.isPaused(b, now: now))
        #expect(health.lastCheck[b] == "refused")
    }

    @Test("fall: a target goes out at the fall-th failed check in a row, a pass between starting over; rise: back at the rise-th passed check in a row, a failure between starting over")
    func fallAndRise() {
        var health = ConnectionTargetHealth(failurePause: .seconds(10))
        let now = NIODeadline.uptimeNanoseconds(1_000_000_000)
        func fails() -> Bool { health.checkFailed(b, why: "503", now: now, fall: 3) }
        func passes() -> Bool { health.checkPassed(b, now: now, rise: 2) }
        #expect(!fails())
        #expect(!fails())
        #expect(health.lastCheck[b] == "503", "what the last check found is shown though the target is in turn")
        #expect(!health.isPaused(b, now: now))
        #expect(!passes(), "in turn: nothing to say")
        #expect(!fails())
        #expect(!fails())
        #expect(!health.isPaused(b, now: now), "the pass started the count over")
        #expect(fails(), "the third in a row: out, the moment to say so")
        #expect(health.isPaused(b, now: now + .seconds(60)))
        #expect(!passes())
        #expect(health.lastCheck[b] == "ok")
        #expect(health.isPaused(b, now: now), "one pass of two")
        #expect(!fails(), "down already: not said again")
        #expect(!passes())
        #expect(health.isPaused(b, now: now), "the failure started the count over")
        #expect(passes(), "the second in a row: back")
        #expect(!health.isPaused(b, now: now))
        #expect(!fails(), "back in turn: three failures again to go out")
    }
}
