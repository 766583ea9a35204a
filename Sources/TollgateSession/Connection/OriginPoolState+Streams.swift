/// The HTTP/2 side of ``OriginPoolState``: streams of multiplexed connections leased to waiters.
extension OriginPoolState {
    /// Free streams on h2 connections that take new ones (counted before making a connection).
    var freeStreams: Int {
        multiplexed.values.reduce(0) { $0 + ($1.goingAway ? 0 : max(0, $1.capacity - $1.open)) }
    }

    /// How many streams are open on `connection` (nil for an HTTP/1.1 connection).
    func openStreams(on connection: Int) -> Int? { multiplexed[connection]?.open }

    /// Opens a stream on the h2 connection with the fewest open streams that has room; nil when
    /// none has. Among those with as few, the next after the last one chosen (in identifier order,
    /// round): one request at a time still goes to each connection — each `connect-to` target —
    /// in turn. The connection becomes `leased` while any stream is open.
    mutating func openStream() -> Int? {
        let free = multiplexed.filter { !$0.value.goingAway && $0.value.open < $0.value.capacity }
        guard let fewest = free.values.map(\.open).min() else { return nil }
        // Identifier order: the choice does not depend on dictionary order.
        let candidates = free.filter { $0.value.open == fewest }.keys.sorted()
        let last = lastStreamConnection ?? Int.min
        let connection = candidates.first { $0 > last } ?? candidates[0]
        lastStreamConnection = connection
        multiplexed[connection]!.open += 1
        markLeased(connection)
        return connection
    }

    /// Hands streams of `connection` to waiters, as many as it has room for; parks it when no
    /// stream is open and nobody waits.
    mutating func offerStreams(of connection: Int) -> Actions {
        guard var streams = multiplexed[connection] else { return [] }
        var actions: Actions = []
        while !streams.goingAway, streams.open < streams.capacity, let waiter = takeFirstWaiter() {
            streams.open += 1
            actions.append(.lease(connection: connection, waiter: waiter))
        }
        multiplexed[connection] = streams
        if streams.open > 0 {
            markLeased(connection)
        } else if streams.goingAway {
            markClosing(connection)
            actions.append(.close(connection: connection))
        } else if markIdle(connection) {
            actions.append(.park(connection: connection))
        }
        return actions
    }

    /// A stream's task is done with it. `reusable` false: the connection itself is no good (its
    /// trust was refused, it failed) and closes, failing its other streams.
    mutating func streamReleased(_ connection: Int, reusable: Bool) -> Actions {
        guard var streams = multiplexed[connection], streams.open > 0 else { return [] }
        streams.open -= 1
        multiplexed[connection] = streams
        guard reusable else {
            markClosing(connection)
            return [.close(connection: connection)] + connectIfUseful()
        }
        return offerStreams(of: connection)
    }

    /// The server's SETTINGS said how many streams it takes at once.
    mutating func streamCapacityChanged(_ connection: Int, maximumConcurrentStreams: Int) -> Actions {
        guard var streams = multiplexed[connection], !streams.goingAway else { return [] }
        streams.capacity = max(0, min(maximumConcurrentStreams, Self.maximumStreams))
        streams.settled = true
        multiplexed[connection] = streams
        return offerStreams(of: connection) + connectWhileUseful()
    }

    /// The server sent GOAWAY: no new stream on `connection`; the open ones finish (those it
    /// refused fail on their own). Closed at once when none is open; waiters get a new connection.
    mutating func goAwayReceived(_ connection: Int) -> Actions {
        guard var streams = multiplexed[connection], !streams.goingAway else { return [] }
        streams.goingAway = true
        multiplexed[connection] = streams
        var actions: Actions = []
        if streams.open == 0 {
            markClosing(connection)
            actions.append(.close(connection: connection))
        }
        return actions + connectWhileUseful()
    }

    /// The server refused a stream of `connection` (REFUSED_STREAM, or above its GOAWAY's last
    /// stream id): the connection takes no new stream, as after GOAWAY, so the request sent again
    /// goes to another one; the refused stream is released.
    mutating func streamRefused(_ connection: Int) -> Actions {
        goAwayReceived(connection) + streamReleased(connection, reusable: true)
    }
}
