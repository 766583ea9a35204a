import NIOConcurrencyHelpers
import NIOCore

/// Tries a connection's targets in the order ``ConnectionTargetHealth`` gave — a host's
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
    var label: String { parents ? ConnectionPool.parentsLabel : origin }

    /// A walk over `targets` in the order `health` gives now: `connect-to` targets in turn, a
    /// session's proxies in their order; the ones that failed lately last.
    init(ordering targets: [ConnectionTarget], parents: Bool, origin: String, health: NIOLockedValueBox<ConnectionTargetHealth>) {
        self.parents = parents
        self.origin = origin
        self.health = health
        let label = parents ? ConnectionPool.parentsLabel : origin
        self.targets = health.withLockedValue { $0.order(targets, for: label, now: .now(), rotating: !parents) }
    }

    /// Runs the walk: `attempt` gets each target and the connect timeout to use for it (shorter
    /// while others are left: a SYN lost on the way is sent again after 1 s, so 3 s is two more
    /// tries, and the request that met a dead target still gets an answer within the upstream
    /// timeout).
    func run<T>(
        on eventLoop: any EventLoop, _ attempt: @escaping (ConnectionTarget, TimeAmount) -> EventLoopFuture<T>
    ) -> EventLoopFuture<T> {
        step(targets[...], failures: [], on: eventLoop, attempt)
    }

    private func step<T>(
        _ left: ArraySlice<ConnectionTarget>, failures: [String], on eventLoop: any EventLoop,
        _ attempt: @escaping (ConnectionTarget, TimeAmount) -> EventLoopFuture<T>
    ) -> EventLoopFuture<T> {
        guard let target = left.first else {
            let what = parents ? "no upstream proxy" : "no connect-to target"
            return eventLoop.makeFailedFuture(
                SessionError(.cannotConnectToHost, nil, "\(origin): \(what) could be reached (\(failures.joined(separator: "; ")))")
            )
        }
        let timeout: TimeAmount = left.count > 1 ? ConnectionPool.connectTimeoutBeforeNextTarget : .seconds(10)
        return attempt(target, timeout).map { made in
            ConnectionPool.noteTargetSucceeded(target, of: label, parent: parents, in: health)
            return made
        }.flatMapError { error in
            if let answered = error as? SessionError, answered.answeredByProxy {
                ConnectionPool.noteTargetSucceeded(target, of: label, parent: parents, in: health)
                return eventLoop.makeFailedFuture(answered)
            }
            let why = (error as? SessionError)?.detail ?? ConnectionPool.reason(error)
            ConnectionPool.noteTargetFailed(target, of: label, why: why, parent: parents, in: health)
            return step(left.dropFirst(), failures: failures + ["\(target): \(why)"], on: eventLoop, attempt)
        }
    }
}
