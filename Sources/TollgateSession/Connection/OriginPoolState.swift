/// The bookkeeping of the connections to one origin: which are idle, which are leased, how
/// many are being made, and who waits — a pure state machine, so it is tested without sockets.
///
/// Waiters are served by priority (higher first), then in arrival order. At most `limit`
/// connections exist or are being made at once.
///
/// Event-loop affinity: waiters and connections carry the identity of their event loop (`loop`).
/// A lease takes an idle connection on the waiter's own loop when there is one, and a released
/// connection goes to the first waiter of the head's priority on the connection's loop, so that
/// an exchange's events do not hop threads. The head waiter is passed over this way at most
/// ``maximumBypasses`` times, so a waiter on another loop is never starved.
struct OriginPoolState {
    struct Waiter: Equatable {
        var id: Int
        var priority: Float
        var sequence: Int
        var loop: Int = 0
        /// How often a later waiter on the connection's loop was served before this one.
        var bypassed = 0
    }

    /// How often the head waiter may be passed over for one on the released connection's loop.
    static let maximumBypasses = 8

    enum Action: Equatable {
        /// Hand this idle connection to this waiter.
        case lease(connection: Int, waiter: Int)
        /// Start making a new connection.
        case connect
        /// Keep the connection idle (start its idle timer).
        case park(connection: Int)
        /// Close the connection.
        case close(connection: Int)
        /// Fail this waiter (its connection attempt failed).
        case fail(waiter: Int)
        /// Nothing to do.
        case none
    }

    let limit: Int
    private(set) var idle: [Int] = []
    private(set) var leased: Set<Int> = []
    private(set) var connecting = 0
    private(set) var waiters: [Waiter] = []
    private var sequence = 0
    /// The event loop of each connection made (idle or leased).
    private var loops: [Int: Int] = [:]

    init(limit: Int) { self.limit = max(1, limit) }

    var total: Int { idle.count + leased.count + connecting }
    var isUnused: Bool { total == 0 && waiters.isEmpty }

    /// A task wants a connection.
    mutating func leaseRequested(waiter id: Int, priority: Float, loop: Int = 0) -> Actions {
        // The most recently used idle connection on the waiter's loop, else the most recent one.
        if let index = idle.lastIndex(where: { loops[$0] == loop }) ?? (idle.isEmpty ? nil : idle.endIndex - 1) {
            let connection = idle.remove(at: index)
            leased.insert(connection)
            return [.lease(connection: connection, waiter: id)]
        }
        sequence += 1
        let waiter = Waiter(id: id, priority: priority, sequence: sequence, loop: loop)
        let index = waiters.firstIndex { $0.priority < priority } ?? waiters.endIndex
        waiters.insert(waiter, at: index)
        return connectIfUseful()
    }

    /// An idle connection leased at once, without a waiter (the most recently used on `loop`, else
    /// the most recent); nil when none is idle or tasks are already waiting.
    mutating func takeIdle(loop: Int) -> Int? {
        guard waiters.isEmpty,
            let index = idle.lastIndex(where: { loops[$0] == loop }) ?? (idle.isEmpty ? nil : idle.endIndex - 1)
        else { return nil }
        let connection = idle.remove(at: index)
        leased.insert(connection)
        return connection
    }

    /// A waiter gave up (its task was cancelled).
    mutating func waiterCancelled(_ id: Int) {
        waiters.removeAll { $0.id == id }
    }

    /// A new connection is ready.
    mutating func connected(_ connection: Int, loop: Int = 0) -> Actions {
        connecting -= 1
        loops[connection] = loop
        return offer(connection)
    }

    /// A connection attempt failed: the first waiter learns of it.
    mutating func connectFailed() -> Actions {
        connecting -= 1
        guard !waiters.isEmpty else { return [] }
        let first = waiters.removeFirst()
        return [.fail(waiter: first.id)] + connectIfUseful()
    }

    /// A lessee is done with a connection.
    mutating func released(_ connection: Int, reusable: Bool) -> Actions {
        guard leased.remove(connection) != nil else { return [] }
        guard reusable else { return [.close(connection: connection)] + connectIfUseful() }
        return offer(connection)
    }

    /// A connection closed (server close, error, idle timeout).
    mutating func closed(_ connection: Int) -> Actions {
        let wasKnown = leased.remove(connection) != nil || idle.contains(connection)
        idle.removeAll { $0 == connection }
        loops[connection] = nil
        return wasKnown ? connectIfUseful() : []
    }

    /// A lessee took the connection out of the pool for good (it became a stream).
    mutating func detached(_ connection: Int) -> Actions {
        closed(connection)
    }

    /// An idle connection's timer fired.
    mutating func idleTimedOut(_ connection: Int) -> Actions {
        guard let index = idle.firstIndex(of: connection) else { return [] }
        idle.remove(at: index)
        loops[connection] = nil
        return [.close(connection: connection)]
    }

    private mutating func offer(_ connection: Int) -> Actions {
        if !waiters.isEmpty {
            var index = 0
            let loop = loops[connection] ?? 0
            let head = waiters[0]
            if head.loop != loop, head.bypassed < Self.maximumBypasses,
                let same = waiters.firstIndex(where: { $0.loop == loop && $0.priority == head.priority })
            {
                waiters[0].bypassed += 1
                index = same
            }
            let waiter = waiters.remove(at: index)
            leased.insert(connection)
            return [.lease(connection: connection, waiter: waiter.id)]
        }
        idle.append(connection)
        return [.park(connection: connection)]
    }

    /// One more connection is worth making while more tasks wait than connections are coming.
    private mutating func connectIfUseful() -> Actions {
        guard waiters.count > connecting, total < limit else { return [] }
        connecting += 1
        return [.connect]
    }
}
