import NIOCore

/// The order in which a host's ``ConnectionTarget``s are tried, per host and port: each new
/// connection starts at the next target (round robin over connections, among the targets not
/// paused, each target's turns as many as its ``ConnectionTarget/weight`` in a round, spread out
/// as nginx's smooth weighted round robin spreads them), backups (``ConnectionTarget/isBackup``)
/// after every other target not paused, and a target that could not be connected to goes last for ``failurePause``
/// (nginx's `max_fails=1 fail_timeout=10s`: passive health). A target an active health check
/// found down (``ConnectionTargetCheck``) goes last until a check passes: a request's connection
/// made to it does not take it back, since a check may ask more than a connection (HAProxy's
/// server state, set by its checks). A check's `fall` and `rise` (HAProxy's) say how many failed
/// checks in a row take a target out and how many passed in a row bring it back. When every target failed recently they are all tried, the
/// one that failed longest ago first. Pure: the pool keeps it under its lock and says what happened.
struct ConnectionTargetHealth {
    /// How long a target that failed goes last.
    let failurePause: TimeAmount
    /// Per `HOST:PORT` of the request: how many connections were started (the rotation).
    private var started: [String: Int] = [:]
    /// When each failed target may go in its turn again.
    private var pausedUntil: [ConnectionTarget: NIODeadline] = [:]
    /// The targets a health check found down, with when its last failed check ended.
    private var downByCheck: [ConnectionTarget: NIODeadline] = [:]
    /// What each checked target's last check found (`ok`, or why it failed), for `/upstreams`.
    private(set) var lastCheck: [ConnectionTarget: String] = [:]
    /// Per checked target, how many checks in a row went against its state: failed while it is
    /// in turn, passed while it is down (towards `fall` and `rise`).
    private var checksAgainst: [ConnectionTarget: Int] = [:]
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
        // Backups come after the others that may be tried: a connection reaches one only when
        // none of those could be connected to, or all are paused.
        let ready = targets.filter { !isPaused($0, now: now) }
        let paused = targets.filter { isPaused($0, now: now) }.sorted { lastFailure($0) < lastFailure($1) }
        guard !ready.isEmpty else { return paused }
        return Self.rotated(ready.filter { !$0.isBackup }, turn: turn) + Self.rotated(ready.filter(\.isBackup), turn: turn) + paused
    }

    /// `targets` starting at the one whose turn `turn` is, the others after it in their order.
    /// Equal weights: each in turn. Otherwise the round is ``smoothRound(_:)``'s.
    static func rotated(_ targets: [ConnectionTarget], turn: Int) -> [ConnectionTarget] {
        guard targets.count > 1 else { return targets }
        let start: Int
        if targets.allSatisfy({ $0.weight == targets[0].weight }) {
            start = turn % targets.count
        } else {
            let round = smoothRound(targets.map(\.weight))
            start = round[turn % round.count]
        }
        return Array(targets[start...] + targets[..<start])
    }

    /// One round of nginx's smooth weighted round robin over `weights`: the index chosen at each
    /// of `weights`' sum of turns — each index as many times as its weight, spread out (weights
    /// 5, 1, 1 give 0 0 1 0 2 0 0, not five in a row). At each turn every index gains its
    /// weight, the greatest (the first of equals) is chosen and loses the sum.
    static func smoothRound(_ weights: [Int]) -> [Int] {
        let total = weights.reduce(0, +)
        var current = [Int](repeating: 0, count: weights.count)
        var round: [Int] = []
        round.reserveCapacity(total)
        for _ in 0..<total {
            var best = 0
            for index in weights.indices {
                current[index] += weights[index]
                if current[index] > current[best] { best = index }
            }
            current[best] -= total
            round.append(best)
        }
        return round
    }

    /// A connection to `target` could not be made: it goes last for ``failurePause``. Returns
    /// whether it was taking its turns until now (the moment to say it is down).
    @discardableResult
    mutating func failed(_ target: ConnectionTarget, now: NIODeadline) -> Bool {
        known.insert(target)  // a health check's target, before any connection was asked of it
        let wasInTurn = !isPaused(target, now: now)
        pausedUntil[target] = now + failurePause
        return wasInTurn
    }

    /// A connection to `target` was made: it takes its turns again, unless a health check found
    /// it down. Returns whether it had failed before and is back (the moment to say so).
    @discardableResult
    mutating func succeeded(_ target: ConnectionTarget) -> Bool {
        known.insert(target)
        return pausedUntil.removeValue(forKey: target) != nil && downByCheck[target] == nil
    }

    /// A health check of `target` failed (`why`): the `fall`th in a row takes it out, until
    /// `rise` checks in a row pass. Returns whether it went out now, having been taking its
    /// turns (the moment to say it is down).
    @discardableResult
    mutating func checkFailed(_ target: ConnectionTarget, why: String, now: NIODeadline, fall: Int = 1) -> Bool {
        known.insert(target)
        lastCheck[target] = why
        if downByCheck[target] != nil {
            // Down already: the passes counted towards `rise` start over.
            downByCheck[target] = now
            checksAgainst[target] = nil
            return false
        }
        let inARow = checksAgainst[target, default: 0] + 1
        guard inARow >= fall else {
            checksAgainst[target] = inARow
            return false
        }
        let wasInTurn = !isPaused(target, now: now)
        downByCheck[target] = now
        checksAgainst[target] = nil
        return wasInTurn
    }

    /// A health check of `target` passed: the `rise`th in a row brings back a target checks took
    /// out; one that is not down by checks takes its turns again at once, whatever failed before.
    /// Returns whether it had been going last and is back (the moment to say so).
    @discardableResult
    mutating func checkPassed(_ target: ConnectionTarget, now: NIODeadline, rise: Int = 1) -> Bool {
        known.insert(target)
        lastCheck[target] = "ok"
        if downByCheck[target] != nil {
            let inARow = checksAgainst[target, default: 0] + 1
            guard inARow >= rise else {
                checksAgainst[target] = inARow
                return false
            }
        }
        let wasOut = isPaused(target, now: now)
        downByCheck[target] = nil
        pausedUntil[target] = nil
        checksAgainst[target] = nil
        return wasOut
    }

    /// Forgets what checks found of targets no longer checked (a reload took their checks out):
    /// one a check found down would otherwise go last for ever.
    mutating func keepChecks(of checked: Set<ConnectionTarget>) {
        guard downByCheck.keys.contains(where: { !checked.contains($0) }) || lastCheck.keys.contains(where: { !checked.contains($0) })
        else { return }
        downByCheck = downByCheck.filter { checked.contains($0.key) }
        lastCheck = lastCheck.filter { checked.contains($0.key) }
        checksAgainst = checksAgainst.filter { checked.contains($0.key) }
    }

    /// Forgets every target but `kept` (a reload took the others out of the rules): they are no
    /// longer listed, and one that comes back starts afresh.
    mutating func forget(except kept: Set<ConnectionTarget>) {
        known = known.intersection(kept)
        pausedUntil = pausedUntil.filter { kept.contains($0.key) }
        downByCheck = downByCheck.filter { kept.contains($0.key) }
        lastCheck = lastCheck.filter { kept.contains($0.key) }
        checksAgainst = checksAgainst.filter { kept.contains($0.key) }
    }

    /// Whether `target` is going last now: a connection to it failed within ``failurePause``, or
    /// its last health check failed.
    func isPaused(_ target: ConnectionTarget, now: NIODeadline) -> Bool {
        downByCheck[target] != nil || (pausedUntil[target] ?? now) > now
    }

    /// When `target` last failed, as far as the order goes (the one that failed longest ago is
    /// tried first when all are going last).
    private func lastFailure(_ target: ConnectionTarget) -> NIODeadline {
        let passive = pausedUntil[target].map { $0 - failurePause } ?? .distantPast
        return max(passive, downByCheck[target] ?? .distantPast)
    }
}
