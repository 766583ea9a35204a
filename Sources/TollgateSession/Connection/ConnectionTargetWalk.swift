import Logging
import NIOConcurrencyHelpers
import NIOCore

/// Tries a connection's targets in the order ``ConnectionTargetHealth`` gives — a host's
/// `connect-to` targets, or the session's upstream proxies —, each with the caller's `attempt`,
/// until one answers: the pool's connections and stream tasks walk them alike.
///
/// A target whose attempt fails is noted (it goes last for a while, logged when it had been in
/// turn) and the next tried; with none left the walk fails naming each target and why. A parent
/// that answered the CONNECT — even with a refusal — is up, and its answer is the walk's
/// (``SessionError/answeredByProxy``).
struct ConnectionTargetWalk {
    /// The targets in the order to try them.
    let targets: [ConnectionTarget]
    /// Whether they are upstream proxies (else `connect-to` targets).
    let parents: Bool
    /// The request's `HOST:PORT`, for the error when none answers.
    let origin: String
    let health: NIOLockedValueBox<ConnectionTargetHealth>

    /// The label of the targets' rotation and log lines.
    var label: String { parents ? Self.parentsLabel : origin }

    /// The walk for a connection to `host:port` made directly (`proxy` nil) or through `proxy`:
    /// the host's `connect-to` targets in turn when it is direct, the session's proxies in their
    /// order when there are fallbacks; nil when there is nothing to walk (the name, or the one
    /// proxy, is connected to as it is).
    init?(
        host: String, port: Int, proxy: UpstreamProxy?, configuration: ConnectionPool.Configuration,
        health: NIOLockedValueBox<ConnectionTargetHealth>
    ) {
        let candidates: [ConnectionTarget]
        if let proxy {
            guard !configuration.upstreamProxyFallbacks.isEmpty else { return nil }
            candidates = ([proxy] + configuration.upstreamProxyFallbacks).map { ConnectionTarget(host: $0.host, port: $0.port) }
        } else {
            candidates = configuration.connectionTargets?(host, port) ?? []
            guard !candidates.isEmpty else { return nil }
        }
        self.parents = proxy != nil
        self.origin = "\(host):\(port)"
        self.health = health
        let (label, rotating) = (parents ? Self.parentsLabel : origin, !parents)
        self.targets = health.withLockedValue { $0.order(candidates, for: label, now: .now(), rotating: rotating) }
    }

    /// Runs the walk: `attempt` gets each target and the connect timeout to use for it (shorter
    /// while others are left: a SYN lost on the way is sent again after 1 s, so 3 s is two more
    /// tries, and the request that met a dead target still gets an answer within the upstream
    /// timeout).
    func run<T>(
        on eventLoop: any EventLoop, _ attempt: @escaping @Sendable (ConnectionTarget, TimeAmount) -> EventLoopFuture<T>
    ) -> EventLoopFuture<T> {
        step(targets[...], failures: [], on: eventLoop, attempt)
    }

    private func step<T>(
        _ left: ArraySlice<ConnectionTarget>, failures: [String], on eventLoop: any EventLoop,
        _ attempt: @escaping @Sendable (ConnectionTarget, TimeAmount) -> EventLoopFuture<T>
    ) -> EventLoopFuture<T> {
        guard let target = left.first else {
            let what = parents ? "no upstream proxy" : "no connect-to target"
            return eventLoop.makeFailedFuture(
                SessionError(.cannotConnectToHost, nil, "\(origin): \(what) could be reached (\(failures.joined(separator: "; ")))")
            )
        }
        let timeout: TimeAmount = left.count > 1 ? Self.connectTimeoutBeforeNextTarget : .seconds(10)
        return attempt(target, timeout).map { made in
            Self.noteSucceeded(target, of: label, parent: parents, in: health)
            return made
        }.flatMapError { error in
            if let answered = error as? SessionError, answered.answeredByProxy {
                Self.noteSucceeded(target, of: label, parent: parents, in: health)
                return eventLoop.makeFailedFuture(answered)
            }
            let why = (error as? SessionError)?.detail ?? ConnectionPool.reason(error)
            Self.noteFailed(target, of: label, why: why, parent: parents, in: health)
            return step(left.dropFirst(), failures: failures + ["\(target): \(why)"], on: eventLoop, attempt)
        }
    }

    // MARK: what the walks share

    /// How long a connection to a target may take while other targets are left.
    static let connectTimeoutBeforeNextTarget: TimeAmount = .seconds(3)

    /// The rotation and log label of a session's proxies.
    static let parentsLabel = "upstream-proxy"

    /// Connections to each target that could not be made, in this process (every session's; kept
    /// across reloads, as a counter must be).
    static let failures = NIOLockedValueBox<[ConnectionTarget: Int]>([:])

    /// Where a target's going down and coming back are logged.
    static let logger = Logger(label: "tollgate.upstream")

    /// A connection to `target` failed (not made, or lost before its first response): noted, and
    /// logged when it had been taking its turns.
    static func noteFailed(
        _ target: ConnectionTarget, of origin: String, why: String, parent: Bool = false,
        in health: NIOLockedValueBox<ConnectionTargetHealth>
    ) {
        let (wasInTurn, pause) = health.withLockedValue { ($0.failed(target, now: .now()), $0.failurePause) }
        failures.withLockedValue { $0[target, default: 0] += 1 }
        guard wasInTurn else { return }
        logger.warning(
            "\(parent ? "an upstream proxy" : "a connect-to target") failed; it goes last for \(pause.nanoseconds / 1_000_000_000) s",
            metadata: ["host": "\(origin)", "target": "\(target)", "error": "\(why)"]
        )
    }

    /// A health check of `target` failed: the `fall`th in a row takes it out until checks pass;
    /// counted, and logged when it goes out having been taking its turns.
    static func noteCheckFailed(
        _ target: ConnectionTarget, why: String, fall: Int = 1, in health: NIOLockedValueBox<ConnectionTargetHealth>
    ) {
        let wasInTurn = health.withLockedValue { $0.checkFailed(target, why: why, now: .now(), fall: fall) }
        failures.withLockedValue { $0[target, default: 0] += 1 }
        guard wasInTurn else { return }
        logger.warning(
            "a connect-to target failed its health check; it goes last until a check passes",
            metadata: ["host": "health check", "target": "\(target)", "error": "\(why)"]
        )
    }

    /// A health check of `target` passed: it takes its turns (a target checks took out, at the
    /// `rise`th in a row); logged when it had been going last.
    static func noteCheckPassed(_ target: ConnectionTarget, rise: Int = 1, in health: NIOLockedValueBox<ConnectionTargetHealth>) {
        guard health.withLockedValue({ $0.checkPassed(target, now: .now(), rise: rise) }) else { return }
        logger.notice("a connect-to target answers again", metadata: ["host": "health check", "target": "\(target)"])
    }

    /// A connection to `target` was made: noted, and logged when it had failed before.
    static func noteSucceeded(
        _ target: ConnectionTarget, of origin: String, parent: Bool = false, in health: NIOLockedValueBox<ConnectionTargetHealth>
    ) {
        guard health.withLockedValue({ $0.succeeded(target) }) else { return }
        logger.notice(
            "\(parent ? "an upstream proxy" : "a connect-to target") answers again", metadata: ["host": "\(origin)", "target": "\(target)"]
        )
    }
}
