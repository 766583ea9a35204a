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
///
/// HTTP/2: a connection the origin answered with `h2` carries many exchanges at once (streams, up
/// to its ``Streams/capacity``); it is leased to each of them, stays `leased` while any stream is
/// open and `idle` when none is. An origin that may speak h2 (`mayMultiplex`) gets one connection
/// until the first one tells its protocol; once it is known to be h2, a new connection is made only
/// when every h2 connection is full (or going away) — or, for an origin whose connections go to
/// several `connect-to` targets (`spread`), until there is one per target, so that the streams
/// spread over the backends instead of all riding the first connection. See
/// `OriginPoolState+Streams.swift`.
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

    /// What is known of the protocol an origin that may speak h2 answers with.
    enum OriginProtocol: Equatable {
        /// No connection has been made yet (or the origin does not offer h2: `mayMultiplex` false).
        case unknown
        case http1
        case http2
    }

    /// An h2 connection's streams.
    struct Streams: Equatable {
        /// Streams open now (leased to tasks).
        var open = 0
        /// How many may be open at once: 1 until the server's SETTINGS arrive (the first stream's
        /// task decides the server's trust before any other stream starts), then its
        /// SETTINGS_MAX_CONCURRENT_STREAMS (capped by ``maximumStreams``); 0 after a GOAWAY.
        var capacity = 1
        /// A GOAWAY arrived: no new stream; closed when the last open one is released.
        var goingAway = false
        /// The server's SETTINGS arrived (until then the connection may well take every waiter).
        var settled = false
    }

    /// The most streams the pool puts on one h2 connection, whatever the server allows.
    static let maximumStreams = 100

    let limit: Int
    /// Whether the origin is offered h2 (https, not switched off for its host).
    let mayMultiplex: Bool
    /// How many h2 connections to keep for spreading streams: the number of `connect-to` targets
    /// the origin's connections go to (each new connection goes to the next); 1 otherwise. Set
    /// again when the connections are retired (a reload changed the targets: ``spread(over:)``).
    private(set) var spread: Int
    private(set) var idle: [Int] = []
    private(set) var leased: Set<Int> = []
    private(set) var connecting = 0
    private(set) var waiters: [Waiter] = []
    private var sequence = 0
    /// The event loop of each connection made (idle or leased).
    private(set) var loops: [Int: Int] = [:]
    /// The h2 connections and their streams (absent: an HTTP/1.1 connection, leased whole).
    var multiplexed: [Int: Streams] = [:]
    private(set) var originProtocol = OriginProtocol.unknown
    /// The h2 connection the last stream was opened on: ties go round (``openStream()``).
    var lastStreamConnection: Int?

    init(limit: Int, mayMultiplex: Bool = false, spread: Int = 1) {
        self.limit = max(1, limit)
        self.mayMultiplex = mayMultiplex
        self.spread = 1
        self.spread(over: spread)
    }

    /// Spreads h2 streams over `targets` connections (at least one, at most ``limit``).
    mutating func spread(over targets: Int) {
        spread = max(1, min(targets, limit))
    }

    var total: Int { idle.count + leased.count + connecting }
    var isUnused: Bool { total == 0 && waiters.isEmpty }

    /// A task wants a connection.
    mutating func leaseRequested(waiter id: Int, priority: Float, loop: Int = 0) -> Actions {
        if waiters.isEmpty, let connection = openStream() {
            return [.lease(connection: connection, waiter: id)] + spreadIfUseful()
        }
        // The most recently used idle connection on the waiter's loop, else the most recent one.
        if let index = idleHTTP1(on: loop) {
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
        guard waiters.isEmpty else { return nil }
        // With targets to spread over, the lease that makes the next connection goes the long way.
        if spreadWouldConnect { return nil }
        if let connection = openStream() { return connection }
        guard
            let index = idleHTTP1(on: loop)
        else { return nil }
        let connection = idle.remove(at: index)
        leased.insert(connection)
        return connection
    }

    /// A waiter gave up (its task was cancelled).
    mutating func waiterCancelled(_ id: Int) {
        waiters.removeAll { $0.id == id }
    }

    /// A new connection is ready: an HTTP/1.1 one, or (`http2`) one that multiplexes streams.
    mutating func connected(_ connection: Int, loop: Int = 0, http2: Bool = false) -> Actions {
        connecting -= 1
        loops[connection] = loop
        if mayMultiplex { originProtocol = http2 ? .http2 : .http1 }
        guard http2 else {
            // HTTP/1.1 after all: the connections held back while the protocol was unknown.
            return mayMultiplex ? offer(connection) + connectWhileUseful() : offer(connection)
        }
        multiplexed[connection] = Streams()
        return offerStreams(of: connection) + connectWhileUseful()
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
        if multiplexed[connection] != nil { return streamReleased(connection, reusable: reusable) }
        guard leased.remove(connection) != nil else { return [] }
        guard reusable else { return [.close(connection: connection)] + connectIfUseful() }
        return offer(connection)
    }

    /// A connection closed (server close, error, idle timeout).
    mutating func closed(_ connection: Int) -> Actions {
        let wasKnown = leased.remove(connection) != nil || idle.contains(connection)
        idle.removeAll { $0 == connection }
        loops[connection] = nil
        multiplexed[connection] = nil
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
        multiplexed[connection] = nil
        return [.close(connection: connection)]
    }

    mutating func offer(_ connection: Int) -> Actions {
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

    // MARK: h2 bookkeeping (the sets are written here only)

    /// `connection` has open streams: leased, not idle.
    mutating func markLeased(_ connection: Int) {
        idle.removeAll { $0 == connection }
        leased.insert(connection)
    }

    /// `connection` has no open stream: idle. False when it already was.
    mutating func markIdle(_ connection: Int) -> Bool {
        leased.remove(connection)
        guard !idle.contains(connection) else { return false }
        idle.append(connection)
        return true
    }

    /// `connection` is being closed: neither idle nor leased, and no new stream goes on it.
    mutating func markClosing(_ connection: Int) {
        leased.remove(connection)
        idle.removeAll { $0 == connection }
        multiplexed[connection]?.goingAway = true
    }

    /// The most recently used idle HTTP/1.1 connection on `loop`, else the most recent one.
    private func idleHTTP1(on loop: Int) -> Int? {
        guard multiplexed.isEmpty else {
            return idle.lastIndex { loops[$0] == loop && multiplexed[$0] == nil }
                ?? idle.lastIndex { multiplexed[$0] == nil }
        }
        return idle.lastIndex { loops[$0] == loop } ?? (idle.isEmpty ? nil : idle.endIndex - 1)
    }

    /// The first waiter, taken out of the queue.
    mutating func takeFirstWaiter() -> Int? {
        waiters.isEmpty ? nil : waiters.removeFirst().id
    }

    /// One more connection is worth making while more tasks wait than connections are coming
    /// (and than free streams there are on h2 connections). While an origin that may speak h2 has
    /// not said which it speaks, one connection at a time; once it speaks h2, another connection
    /// only when none is coming and every h2 connection has said how many streams it takes.
    mutating func connectIfUseful() -> Actions {
        guard waiters.count > connecting + freeStreams, total < limit else { return [] }
        if mayMultiplex, originProtocol != .http1, connecting > 0 { return [] }
        if mayMultiplex, originProtocol == .unknown, total > 0 { return [] }
        if mayMultiplex, multiplexed.values.contains(where: { !$0.settled && !$0.goingAway }) { return [] }
        connecting += 1
        return [.connect]
    }

    /// Whether one more h2 connection is worth making to spread streams: while the origin's
    /// streams go to fewer connections than it has `connect-to` targets, one at a time, once every
    /// h2 connection has said how many streams it takes.
    var spreadWouldConnect: Bool {
        spread > 1 && originProtocol == .http2 && connecting == 0 && total < limit
            && multiplexed.values.allSatisfy { $0.settled || $0.goingAway }
            && multiplexed.values.filter { !$0.goingAway }.count < spread
    }

    /// The connection ``spreadWouldConnect`` asks for.
    mutating func spreadIfUseful() -> Actions {
        guard spreadWouldConnect else { return [] }
        connecting += 1
        return [.connect]
    }

    /// ``connectIfUseful()`` as often as it finds a connection worth making.
    mutating func connectWhileUseful() -> Actions {
        var actions: Actions = []
        while let connect = connectIfUseful().first { actions.append(connect) }
        return actions
    }
}
