import Testing
@testable import TollgateSession

@Suite("Connection pool state machine")
struct OriginPoolStateTests {
    @Test("The first lease makes a connection and hands it over when connected")
    func firstLeaseConnects() {
        var pool = OriginPoolState(limit: 2)
        #expect(pool.leaseRequested(waiter: 1, priority: 0.5) == [.connect])
        #expect(pool.connected(10) == [.lease(connection: 10, waiter: 1)])
        #expect(pool.released(10, reusable: true) == [.park(connection: 10)])
        #expect(pool.leaseRequested(waiter: 2, priority: 0.5) == [.lease(connection: 10, waiter: 2)])
    }

    @Test("An idle connection is taken at once, on the asking loop first; never past waiters")
    func takeIdle() {
        var pool = OriginPoolState(limit: 2)
        #expect(pool.takeIdle(loop: 1) == nil)
        _ = pool.leaseRequested(waiter: 1, priority: 0.5, loop: 1)
        _ = pool.leaseRequested(waiter: 2, priority: 0.5, loop: 2)
        #expect(pool.connected(10, loop: 1) == [.lease(connection: 10, waiter: 1)])
        #expect(pool.connected(20, loop: 2) == [.lease(connection: 20, waiter: 2)])
        #expect(pool.released(10, reusable: true) == [.park(connection: 10)])
        #expect(pool.released(20, reusable: true) == [.park(connection: 20)])
        #expect(pool.takeIdle(loop: 1) == 10)
        #expect(pool.takeIdle(loop: 1) == 20)  // none left on loop 1: another loop's
        #expect(pool.takeIdle(loop: 1) == nil)
        #expect(pool.total == 2)
        // A waiter queued (both leased, limit reached) is served by the next release, not
        // passed by a task asking for an idle connection meanwhile.
        #expect(pool.leaseRequested(waiter: 3, priority: 0.5, loop: 1) == [])
        #expect(pool.released(10, reusable: true) == [.lease(connection: 10, waiter: 3)])
        #expect(pool.takeIdle(loop: 1) == nil)
    }

    @Test("No more connections than the limit; later waiters queue")
    func limitHolds() {
        var pool = OriginPoolState(limit: 1)
        #expect(pool.leaseRequested(waiter: 1, priority: 0.5) == [.connect])
        #expect(pool.leaseRequested(waiter: 2, priority: 0.5) == [])
        #expect(pool.connected(10) == [.lease(connection: 10, waiter: 1)])
        #expect(pool.total == 1)
        #expect(pool.released(10, reusable: true) == [.lease(connection: 10, waiter: 2)])
    }

    @Test("Queued waiters are served by priority, then in arrival order")
    func priorityOrder() {
        var pool = OriginPoolState(limit: 1)
        _ = pool.leaseRequested(waiter: 1, priority: 0.5)
        _ = pool.connected(10)
        _ = pool.leaseRequested(waiter: 2, priority: 0.25)
        _ = pool.leaseRequested(waiter: 3, priority: 0.75)
        _ = pool.leaseRequested(waiter: 4, priority: 0.5)
        _ = pool.leaseRequested(waiter: 5, priority: 0.75)
        var order: [Int] = []
        for _ in 0..<4 {
            guard case .lease(_, let waiter)? = pool.released(10, reusable: true).first else { break }
            order.append(waiter)
        }
        #expect(order == [3, 5, 4, 2])
    }

    @Test("A connection that cannot be reused is closed and replaced for a waiter")
    func unusableReplaced() {
        var pool = OriginPoolState(limit: 1)
        _ = pool.leaseRequested(waiter: 1, priority: 0.5)
        _ = pool.connected(10)
        _ = pool.leaseRequested(waiter: 2, priority: 0.5)
        #expect(pool.released(10, reusable: false) == [.close(connection: 10), .connect])
    }

    @Test("A failed connection attempt fails the first waiter")
    func connectFailure() {
        var pool = OriginPoolState(limit: 1)
        _ = pool.leaseRequested(waiter: 1, priority: 0.5)
        #expect(pool.connectFailed() == [.fail(waiter: 1)])
        #expect(pool.isUnused)
    }

    @Test("An idle connection that closes is never leased")
    func closedIdleForgotten() {
        var pool = OriginPoolState(limit: 2)
        _ = pool.leaseRequested(waiter: 1, priority: 0.5)
        _ = pool.connected(10)
        _ = pool.released(10, reusable: true)
        _ = pool.closed(10)
        #expect(pool.leaseRequested(waiter: 2, priority: 0.5) == [.connect])
    }

    @Test("A cancelled waiter is not served")
    func cancelledWaiter() {
        var pool = OriginPoolState(limit: 1)
        _ = pool.leaseRequested(waiter: 1, priority: 0.5)
        _ = pool.connected(10)
        _ = pool.leaseRequested(waiter: 2, priority: 0.5)
        pool.waiterCancelled(2)
        #expect(pool.released(10, reusable: true) == [.park(connection: 10)])
    }

    @Test("An idle timeout closes only idle connections")
    func idleTimeout() {
        var pool = OriginPoolState(limit: 1)
        _ = pool.leaseRequested(waiter: 1, priority: 0.5)
        _ = pool.connected(10)
        #expect(pool.idleTimedOut(10) == [])
        _ = pool.released(10, reusable: true)
        #expect(pool.idleTimedOut(10) == [.close(connection: 10)])
    }

    @Test("A lease prefers an idle connection on the waiter's own event loop")
    func leasePrefersOwnLoop() {
        var pool = OriginPoolState(limit: 2)
        _ = pool.leaseRequested(waiter: 1, priority: 0.5, loop: 1)
        _ = pool.leaseRequested(waiter: 2, priority: 0.5, loop: 2)
        #expect(pool.connected(10, loop: 1) == [.lease(connection: 10, waiter: 1)])
        #expect(pool.connected(20, loop: 2) == [.lease(connection: 20, waiter: 2)])
        _ = pool.released(10, reusable: true)
        _ = pool.released(20, reusable: true)
        #expect(pool.leaseRequested(waiter: 3, priority: 0.5, loop: 1) == [.lease(connection: 10, waiter: 3)])
        // None left on loop 1: any idle connection rather than waiting.
        #expect(pool.leaseRequested(waiter: 4, priority: 0.5, loop: 1) == [.lease(connection: 20, waiter: 4)])
    }

    @Test("A released connection goes to a waiter on its loop, but the head waiter is not starved")
    func releasePrefersOwnLoopBounded() {
        var pool = OriginPoolState(limit: 1)
        _ = pool.leaseRequested(waiter: 1, priority: 0.5, loop: 1)
        _ = pool.connected(10, loop: 1)
        _ = pool.leaseRequested(waiter: 2, priority: 0.5, loop: 2)
        _ = pool.leaseRequested(waiter: 3, priority: 0.5, loop: 1)
        #expect(pool.released(10, reusable: true) == [.lease(connection: 10, waiter: 3)])
        var next = 100
        for _ in 1..<OriginPoolState.maximumBypasses {
            next += 1
            _ = pool.leaseRequested(waiter: next, priority: 0.5, loop: 1)
            #expect(pool.released(10, reusable: true) == [.lease(connection: 10, waiter: next)])
        }
        _ = pool.leaseRequested(waiter: 999, priority: 0.5, loop: 1)
        #expect(pool.released(10, reusable: true) == [.lease(connection: 10, waiter: 2)])
        // A higher priority still comes first, whatever its loop.
        _ = pool.leaseRequested(waiter: 1000, priority: 0.9, loop: 2)
        #expect(pool.released(10, reusable: true) == [.lease(connection: 10, waiter: 1000)])
    }

    @Test("Actions keep their order inline and beyond, and compare like arrays")
    func actionsInOrder() {
        typealias Actions = OriginPoolState.Actions
        var actions = Actions()
        #expect(actions.first == nil && Array(actions).isEmpty && actions == [])
        let all: [OriginPoolState.Action] = [.park(connection: 1), .connect, .close(connection: 2), .fail(waiter: 3), .none]
        for action in all { actions.append(action) }
        #expect(Array(actions) == all)
        #expect(actions.first == .park(connection: 1))
        #expect(actions == [.park(connection: 1), .connect, .close(connection: 2), .fail(waiter: 3), .none])
        #expect(actions != [.park(connection: 1), .connect, .close(connection: 2), .fail(waiter: 3)])
        #expect(Actions(arrayLiteral: .close(connection: 1)) + [.connect, .connect, .park(connection: 4)] == [.close(connection: 1), .connect, .connect, .park(connection: 4)])
    }
}
