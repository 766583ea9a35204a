import NIOCore

/// The order in which a host's ``ConnectionTarget``s are tried, per host and port: each new
/// connection starts at the next target (round robin over connections, among the targets not
/// paused), and a target that could not be connected to goes last for ``failurePause``
/// (nginx's `max_fails=1 fail_timeout=10s`: passive health, no probes). When every target failed
/// recently they are all tried, the one that failed longest ago first. Pure: the pool keeps it
/// under its lock and says what happened.
struct ConnectionTargetHealth {
    /// How long a target that failed goes last.
    let failurePause: TimeAmount
    /// Per `HOST:PORT` of the request: how many connections were started (the rotation).
    private var started: [String: Int] = [:]
    /// When each failed target may go in its turn again.
    private var pausedUntil: [ConnectionTarget: NIODeadline] = [:]
    /// Every target a connection was asked of (for `/metrics`).
    private(set) var known: Set<ConnectionTarget> = []

    /// The most hosts and ports whose turns are counted at once.
    static let maximumOrigins = 10_000

    init(failurePause: TimeAmount = .seconds(10)) {
        self.failurePause = failurePause
    }

    /// The order to try `targets` in for a new connection to `origin` (the request's host and port).
    /// With `rotating` false the targets not paused keep their order (the first that answers is
    /// used: parents in the order given, as Squid's `FIRST_UP_PARENT`).
    mutating func order(_ targets: [ConnectionTarget], for origin: String, now: NIODeadline, rotating: Bool = true) -> [ConnectionTarget] {
        known.formUnion(targets)
        guard targets.count > 1 else { return targets }
        let turn = rotating ? started[origin, default: 0] : 0
        if rotating {
            // One counter per host and port a wildcard rule's connections went to: bounded, so
            // that clients asking for ever new names do not grow it (the turns start over).
            if started[origin] == nil, started.count >= Self.maximumOrigins { started.removeAll(keepingCapacity: true) }
            started[origin] = turn &+ 1
        }
        // The turn goes round the targets that may be tried now, so that a paused one does not
        // hand its turns to the target after it (which would then get twice the connections).
        let ready = targets.filter { (pausedUntil[$0] ?? now) <= now }
        let paused = targets.filter { (pausedUntil[$0] ?? now) > now }.sorted { pausedUntil[$0]! < pausedUntil[$1]! }
        guard !ready.isEmpty else { return paused }
        let start = turn % ready.count
        return Array(ready[start...] + ready[..<start]) + paused
    }

    /// A connection to `target` could not be made: it goes last for ``failurePause``. Returns
    /// whether it was taking its turns until now (the moment to say it is down).
    @discardableResult
    mutating func failed(_ target: ConnectionTarget, now: NIODeadline) -> Bool {
        known.insert(target)  // a health check's target, before any connection was asked of it
        let wasInTurn = (pausedUntil[target] ?? now) <= now
        pausedUntil[target] = now + failurePause
        return wasInTurn
    }

    /// A connection to `target` was made: it takes its turns again. Returns whether it had
    /// failed before (the moment to say it is back).
    @discardableResult
    mutating func succeeded(_ target: ConnectionTarget) -> Bool {
        known.insert(target)
        return pausedUntil.removeValue(forKey: target) != nil
    }

    /// Whether `target` is going last now (for tests and explanations).
    func isPaused(_ target: ConnectionTarget, now: NIODeadline) -> Bool {
        (pausedUntil[target] ?? now) > now
    }
}
