public import TollgatePolicy
public import TollgateSession

extension PolicyRuntime {
    /// The `connect-to` targets and upstream proxies the sessions in force have connected to, one
    /// status per target (``ConnectionTargetStatus/merged(_:)``): what `/metrics` and
    /// `/upstreams` report.
    public var connectionTargetStatuses: [ConnectionTargetStatus] {
        ConnectionTargetStatus.merged(sessions.values.flatMap(\.connectionTargetStatuses))
    }
}
