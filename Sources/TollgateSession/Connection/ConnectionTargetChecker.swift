import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// Active health checks of `connect-to` targets (``SessionConfiguration/connectionTargetChecks``):
/// every `interval` a TCP connection made to each target, as HAProxy's `check` does by default,
/// or what its ``ConnectionTargetProbe`` asks (a TLS handshake the session trusts, an HTTP
/// status; ``ConnectionPool/probe(_:at:timeout:trust:configuration:resolver:on:)``). A target whose check is not over
/// within its `timeout` (else `min(interval, 3 s)`), or fails (`fall` times in a row), goes last until a check
/// passes (`rise` in a row; ``ConnectionTargetHealth``), before any request pays for it — a machine that is off, whose
/// SYNs go unanswered, would otherwise cost one request a connect timeout every time its pause
/// ran out, and one whose application is down would answer requests with errors; one that
/// passes again takes its turns again at once.
///
/// The checks run on one event loop, at most one per target at a time; names are looked up on
/// the lookup threads (``NameResolver``). Stopped with the session's pool.
final class ConnectionTargetChecker: Sendable {
    /// One target's check (``SessionConfiguration/connectionTargetChecks``).
    typealias Check = ConnectionTargetCheck
    /// Runs a probe (the pool's ``ConnectionPool/probe(_:at:timeout:trust:configuration:resolver:on:)``).
    typealias Prober = @Sendable (ConnectionTargetProbe, ConnectionTarget, TimeAmount, any EventLoop) -> EventLoopFuture<Void>

    private struct State {
        /// When each target's last check started.
        var started: [ConnectionTarget: NIODeadline] = [:]
        /// The targets whose check is under way.
        var running: Set<ConnectionTarget> = []
        var tick: Scheduled<Void>?
        var stopped = false
    }

    /// How often the list is looked at while it has checks (a target's own interval decides
    /// when it is checked).
    static let tickInterval = TimeAmount.milliseconds(100)
    /// How often it is looked at while it has none (a reload may add some): a session without
    /// checks wakes once a second for this, not ten times.
    static let idleTickInterval = TimeAmount.seconds(1)
    /// The longest a check waits for the connection.
    static let longestTimeout = TimeAmount.seconds(3)

    private let loop: any EventLoop
    private let checks: @Sendable () -> [Check]
    private let resolver: NameResolver
    private let health: NIOLockedValueBox<ConnectionTargetHealth>
    private let prober: Prober?
    private let state = NIOLockedValueBox(State())

    init(
        loop: any EventLoop, checks: @escaping @Sendable () -> [Check], resolver: NameResolver,
        health: NIOLockedValueBox<ConnectionTargetHealth>, prober: Prober? = nil
    ) {
        self.loop = loop
        self.checks = checks
        self.resolver = resolver
        self.health = health
        self.prober = prober
    }

    /// Starts checking (the due targets, every ``tickInterval`` while there are checks).
    func start() {
        schedule(after: .zero)
    }

    /// Stops checking; a check under way finishes without effect on the order.
    func stop() {
        let task = state.withLockedValue { state -> Scheduled<Void>? in
            state.stopped = true
            defer { state.tick = nil }
            return state.tick
        }
        task?.cancel()
    }

    private func schedule(after delay: TimeAmount) {
        let task = loop.scheduleTask(in: delay) { [self] in
            let any = runDueChecks()
            schedule(after: any ? Self.tickInterval : Self.idleTickInterval)
        }
        state.withLockedValue { state in
            if state.stopped { task.cancel() } else { state.tick = task }
        }
    }

    /// Starts the checks whose interval has passed since they last started; returns whether
    /// there are checks at all.
    private func runDueChecks() -> Bool {
        let now = NIODeadline.now()
        let listed = checks()
        let checked = Set(listed.map(\.target))
        health.withLockedValue { $0.keepChecks(of: checked) }
        let due = state.withLockedValue { state -> [Check] in
            guard !state.stopped else { return [] }
            // A reload took some targets' checks out: their times go too.
            if state.started.count > checked.count { state.started = state.started.filter { checked.contains($0.key) } }
            var due: [Check] = []
            for check in listed where !state.running.contains(check.target) {
                if let last = state.started[check.target], now - last < TimeAmount(check.interval) { continue }
                state.started[check.target] = now
                state.running.insert(check.target)
                due.append(check)
            }
            return due
        }
        for check in due { run(check) }
        return !listed.isEmpty
    }

    private func run(_ check: Check) {
        let target = check.target
        let timeout = check.timeout.map { TimeAmount($0) } ?? min(TimeAmount(check.interval), Self.longestTimeout)
        let loop = self.loop
        let checked: EventLoopFuture<Void>
        if let probe = check.probe, let prober {
            checked = prober(probe, target, timeout, loop)
        } else {
            checked = resolver.resolve(host: target.host, port: target.port, on: loop).flatMap {
                (addresses: [SocketAddress]) -> EventLoopFuture<any Channel> in
                guard let address = addresses.first else {
                    return loop.makeFailedFuture(ConnectionTargetCheckError(description: "the name has no address"))
                }
                return ClientBootstrap(group: loop).connectTimeout(timeout).connect(to: address)
            }.map { channel in channel.close(promise: nil) }
        }
        checked.whenComplete { [self] result in
            let stopped = state.withLockedValue { state in
                state.running.remove(target)
                return state.stopped
            }
            // A reload may have taken the target's check out while this one ran: it says nothing then.
            guard !stopped, checks().contains(where: { $0.target == target }) else { return }
            switch result {
            case .success:
                ConnectionTargetWalk.noteCheckPassed(target, rise: check.rise, in: health)
            case .failure(let error):
                let why = (error as? SessionError)?.detail ?? ConnectionPool.reason(error)
                ConnectionTargetWalk.noteCheckFailed(target, why: why, fall: check.fall, in: health)
            }
        }
    }
}

/// A health check could not start its connection.
struct ConnectionTargetCheckError: Error, CustomStringConvertible {
    let description: String
}
