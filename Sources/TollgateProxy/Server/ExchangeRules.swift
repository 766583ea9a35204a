import TollgatePolicy

/// What an exchange takes from the rules in force (`limits`, `access`), derived once per
/// connection and kept until the policy's ``ProxyPolicy/generation`` changes (a reload).
///
/// Reading them from the policy per request took its lock three times and copied the access
/// lists each time; a connection's requests now share one copy, checked with an atomic load.
/// A class: each exchange keeps a reference (one retain, not one per list inside).
final class ExchangeRules: Sendable {
    /// The ``ProxyPolicy/generation`` these were derived at.
    let generation: Int
    /// `limits.upstream-timeout`.
    let upstreamTimeout: Duration
    /// `access.destinations` with the proxy's own listeners and the resolver (its `access` also
    /// gives a tunnel `access.connect-ports`).
    let destinations: DestinationCheck
    /// The proxy authenticator of `access.users` for a forward listener (nil: none, or another mode).
    let authenticator: ProxyAuthenticator?
    /// Whether the proxy is offline (`serve --offline` or `offline: true`): nothing goes upstream.
    let offline: Bool
    /// `log.har-entries`: how many exchanges the journal keeps for `GET /har`.
    let harEntries: Int
    /// `limits.websocket-max-message` and `limits.websocket-idle-timeout`.
    let webSocket: WebSocketRelayLimits
    /// `limits.tunnel-idle-timeout`: a tunnel's (or another upgrade's) relay with no byte either way.
    let tunnelIdleTimeout: Duration
    /// `limits.resendable-body`: how much of a request body is kept to be sent again.
    let resendableBody: Int64
    /// `access.rate-limit` (nil: none).
    let rateLimit: PolicyConfiguration.Access.RateLimit?

    /// The rules in force now for a listener of `environment`.
    init(_ environment: ListenerEnvironment) {
        // The generation first: rules read after it are at least as new as it says.
        generation = environment.policy.generation
        let limits = environment.policy.limits
        upstreamTimeout = limits.upstreamTimeout
        webSocket = WebSocketRelayLimits(maximumMessageSize: limits.websocketMaxMessage, idleTimeout: limits.websocketIdleTimeout)
        tunnelIdleTimeout = limits.tunnelIdleTimeout
        resendableBody = limits.resendableBody
        rateLimit = environment.policy.access.rateLimit
        harEntries = environment.policy.configuration.log.harEntries
        offline = environment.offline.isOffline(environment.policy)
        destinations = DestinationCheck(
            access: environment.policy.access,
            ownListeners: environment.ownListeners,
            resolver: environment.resolver
        )
        if case .forward = environment.mode {
            authenticator = environment.authenticators.current()
        } else {
            authenticator = nil
        }
    }
}
