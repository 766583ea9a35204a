public import TollgateHTTP
public import TollgatePolicy

/// The running policy is where a proxy gets its routes: the rules in force, reloaded on SIGHUP.
extension PolicyRuntime: ProxyPolicy {
    public func proxyRoute(for url: HTTPURL) -> ProxyRoute {
        ProxyRoute(route(url))
    }

    public func proxyRoute(forTunnelTo host: String, port: Int) -> ProxyRoute {
        ProxyRoute(route(host: host, port: port))
    }
}

extension ProxyRoute {
    /// The proxy's view of a policy route.
    convenience init(_ route: PolicyRoute) {
        self.init(
            session: route.session,
            sessionName: route.sessionName,
            isDenied: route.isDenied,
            ruleLabel: route.ruleLabel,
            intercepts: route.decision.intercept,
            holds: route.holds,
            connectsElsewhere: !route.decision.connectTo.isEmpty,
            requestHeaders: route.decision.requestHeaders,
            responseHeaders: route.decision.responseHeaders,
            mapLocal: route.decision.mapLocal,
            compress: route.decision.compress,
            mapRemote: route.decision.mapRemote
        )
    }
}
