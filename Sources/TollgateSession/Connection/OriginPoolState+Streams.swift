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
        // One pass, nothing allocated (every stream of an h2 origin comes here): among the
        // connections with room and the fewest open, the lowest identifier after the last one
        // chosen, else the lowest — so the choice does not depend on dictionary order.
        let last = lastStreamConnection ?? Int.min
        var fewest = Int.max
        var lowest: Int?
        var lowestAfterLast: Int?
        for (connection, streams) in multiplexed where !streams.goingAway && streams.open < streams.capacity {
            if streams.open < fewest {
                fewest = streams.open
                lowest = nil
                lowestAfterLast = nil
            }
            guard streams.open == fewest else { continue }
            if connection < (lowest ?? Int.max) { lowest = connection }
            if connection > last, connection < (lowestAfterLast ?? Int.max) { lowestAfterLast = connection }
        }
        guard let connection = lowestAfterLast ?? lowest else { return nil }
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
