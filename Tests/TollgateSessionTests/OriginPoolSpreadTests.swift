import Testing
@testable import TollgateSession

/// An h2 origin whose connections go to several `connect-to` targets (`spread`): the pool makes
/// one connection per target, one at a time, and streams go round the connections.
@Suite("Connection pool state machine: h2 streams spread over connect-to targets")
struct OriginPoolSpreadTests {
    /// A pool whose first h2 connection (10) is up, has said it takes 100 streams, and carries
    /// waiter 1's stream, released again.
    private func pool(spread: Int, limit: Int = 6) -> OriginPoolState {
        var pool = OriginPoolState(limit: limit, mayMultiplex: true, spread: spread)
        _ = pool.leaseRequested(waiter: 1, priority: 0.5)
        _ = pool.connected(10, http2: true)
        _ = pool.streamCapacityChanged(10, maximumConcurrentStreams: 100)
        _ = pool.released(10, reusable: true)
        return pool
    }

    @Test("With three targets each lease makes the next connection, one at a time, until there is one per target")
    func oneConnectionPerTarget() {
        var pool = pool(spread: 3)
        // The stream goes on the connection there is; a second connection is started beside it.
        #expect(pool.takeIdle(loop: 0) == nil, "the lease that makes a connection goes the long way")
        #expect(pool.leaseRequested(waiter: 2, priority: 0.5) == [.lease(connection: 10, waiter: 2), .connect])
        // One at a time: nothing more while it is being made.
        #expect(pool.leaseRequested(waiter: 3, priority: 0.5) == [.lease(connection: 10, waiter: 3)])
        #expect(pool.connected(20, http2: true) == [.park(connection: 20)])
        // Until its SETTINGS arrive the next is not made either.
        #expect(pool.leaseRequested(waiter: 4, priority: 0.5) == [.lease(connection: 20, waiter: 4)])
        _ = pool.streamCapacityChanged(20, maximumConcurrentStreams: 100)
        #expect(pool.leaseRequested(waiter: 5, priority: 0.5) == [.lease(connection: 20, waiter: 5), .connect])
        #expect(pool.connected(30, http2: true) == [.park(connection: 30)])
        _ = pool.streamCapacityChanged(30, maximumConcurrentStreams: 100)
        // Three connections for three targets: no more.
        #expect(pool.leaseRequested(waiter: 6, priority: 0.5) == [.lease(connection: 30, waiter: 6)])
        #expect(pool.total == 3)
        #expect(!pool.spreadWouldConnect)
    }

    @Test("One request at a time still goes round the connections; ties go to the next after the last")
    func roundRobin() {
        var pool = pool(spread: 2)
        #expect(pool.leaseRequested(waiter: 2, priority: 0.5) == [.lease(connection: 10, waiter: 2), .connect])
        _ = pool.released(10, reusable: true)
        _ = pool.connected(20, http2: true)
        _ = pool.streamCapacityChanged(20, maximumConcurrentStreams: 100)
        var chosen: [Int] = []
        for waiter in 3...8 {
            let connection = pool.takeIdle(loop: 0)
            chosen.append(connection ?? -1)
            _ = pool.released(connection ?? 0, reusable: true)
            _ = waiter
        }
        #expect(chosen == [20, 10, 20, 10, 20, 10])
        // Under load the connection with fewer open streams wins.
        #expect(pool.takeIdle(loop: 0) == 20)
        #expect(pool.takeIdle(loop: 0) == 10)
        #expect(pool.takeIdle(loop: 0) == 20)
        _ = pool.released(20, reusable: true)
        _ = pool.released(20, reusable: true)
        #expect(pool.takeIdle(loop: 0) == 20, "10 has one open, 20 none")
    }

    @Test("A connection lost or going away is made again for its target; the limit and one target are the bounds")
    func boundsAndLosses() {
        var pool = pool(spread: 2)
        _ = pool.leaseRequested(waiter: 2, priority: 0.5)
        #expect(pool.connected(20, http2: true) == [.park(connection: 20)])
        _ = pool.streamCapacityChanged(20, maximumConcurrentStreams: 100)
        _ = pool.released(10, reusable: true)
        #expect(pool.goAwayReceived(20) == [.close(connection: 20)])
        _ = pool.closed(20)
        #expect(pool.spreadWouldConnect)
        #expect(pool.leaseRequested(waiter: 3, priority: 0.5) == [.lease(connection: 10, waiter: 3), .connect])
        // A failed attempt leaves the count as it was; the next lease tries again.
        #expect(pool.connectFailed() == [])
        #expect(pool.leaseRequested(waiter: 4, priority: 0.5) == [.lease(connection: 10, waiter: 4), .connect])

        var single = self.pool(spread: 1)
        #expect(single.leaseRequested(waiter: 2, priority: 0.5) == [.lease(connection: 10, waiter: 2)])
        var capped = self.pool(spread: 4, limit: 2)
        #expect(capped.spread == 2)
        #expect(capped.leaseRequested(waiter: 2, priority: 0.5) == [.lease(connection: 10, waiter: 2), .connect])
        _ = capped.connected(20, http2: true)
        _ = capped.streamCapacityChanged(20, maximumConcurrentStreams: 100)
        #expect(!capped.spreadWouldConnect)

        // An origin that answered HTTP/1.1 is not spread this way (its connections are leased whole).
        var plain = OriginPoolState(limit: 6, mayMultiplex: true, spread: 3)
        _ = plain.leaseRequested(waiter: 1, priority: 0.5)
        _ = plain.connected(10, http2: false)
        #expect(!plain.spreadWouldConnect)
    }
}
