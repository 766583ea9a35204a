import NIOConcurrencyHelpers
import NIOCore

/// What a session knows of one `connect-to` target (``SessionConfiguration/connectionTargets``),
/// for `/metrics`.
public struct ConnectionTargetStatus: Hashable, Sendable {
    /// The target.
    public var target: ConnectionTarget
    /// Whether it is being passed over now: a connection to it failed within the last 10 s, or
    /// its last health check failed.
    public var isPassedOver: Bool
    /// Connections to it that could not be made, and health checks it failed, since the process
    /// started (every session's).
    public var failures: Int
    /// What its last health check found: `ok`, or why it failed; nil when it is not checked.
    public var lastCheck: String? = nil

    /// One status per target of `statuses` (several sessions' lists), sorted by target: a target
    /// several sessions use is passed over when any of them passes it over.
    public static func merged(_ statuses: [ConnectionTargetStatus]) -> [ConnectionTargetStatus] {
        var byTarget: [ConnectionTarget: ConnectionTargetStatus] = [:]
        for status in statuses {
            var merged = byTarget[status.target] ?? status
            merged.isPassedOver = merged.isPassedOver || status.isPassedOver
            // A failed check says more than a passed one.
            if merged.lastCheck == nil || status.lastCheck.map({ $0 != "ok" }) == true {
                merged.lastCheck = status.lastCheck ?? merged.lastCheck
            }
            byTarget[status.target] = merged
        }
        return byTarget.values.sorted { $0.target.description < $1.target.description }
    }
}

extension Session {
    /// Forgets the `connect-to` targets that are not in `targets` (the rules' targets after a
    /// reload): `/metrics` and `/upstreams` no longer list them. The session's upstream proxies
    /// are kept.
    public func keepConnectionTargets(_ targets: Set<ConnectionTarget>) {
        var kept = targets
        for proxy in [configuration.upstreamProxy].compactMap({ $0 }) + configuration.upstreamProxyFallbacks {
            kept.insert(ConnectionTarget(host: proxy.host, port: proxy.port))
        }
        pool.targetHealth.withLockedValue { $0.forget(except: kept) }
    }

    /// The `connect-to` targets this session's connections were asked of, and their state.
    public var connectionTargetStatuses: [ConnectionTargetStatus] {
        let now = NIODeadline.now()
        let (known, passedOver, checks) = pool.targetHealth.withLockedValue { health in
            (health.known, Set(health.known.filter { health.isPaused($0, now: now) }), health.lastCheck)
        }
        let failures = ConnectionTargetWalk.failures.withLockedValue { $0 }
        return known.map {
            ConnectionTargetStatus(target: $0, isPassedOver: passedOver.contains($0), failures: failures[$0] ?? 0, lastCheck: checks[$0])
        }
    }
}
