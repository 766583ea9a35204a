public import TollgateSession

extension SessionSettings {
    /// The ``SessionConfiguration`` a session with these settings is created with.
    ///
    /// Set here: the kind (`background` uses `name` as its identifier), request cache policy,
    /// request and resource timeouts, connections per host, additional headers, cookie accept
    /// policy and whether to set cookies (`jar`), and the upstream proxy and its credential (the
    /// password read now). Left to the caller: the
    /// stores (``SessionConfiguration/responseCache``, ``SessionConfiguration/cookieStorage``),
    /// which the proxy attaches from `cache` and the cookie store. The User-Agent is nil so that a
    /// client's own passes through, as `ProxyServer.defaultSessionConfiguration` does.
    ///
    /// - Parameter name: the session's name, the background identifier.
    public func makeSessionConfiguration(name: String) -> SessionConfiguration {
        var configuration: SessionConfiguration
        switch self.configuration {
        case .default: configuration = .default
        case .ephemeral: configuration = .ephemeral
        case .background: configuration = .background(identifier: name)
        }
        configuration.requestCachePolicy = cachePolicy
        configuration.timeoutIntervalForRequest = timeoutRequest
        configuration.timeoutIntervalForResource = timeoutResource
        configuration.httpMaximumConnectionsPerHost = maxConnectionsPerHost
        configuration.httpAdditionalHeaders = headers
        configuration.httpShouldSetCookies = cookies == .jar
        configuration.httpCookieAcceptPolicy = cookieAccept
        configuration.upstreamProxy = upstreamProxy
        configuration.upstreamProxyFallbacks = upstreamProxyFallbacks
        // Read now, as a session is made (at start and on reload); an unset variable or an
        // unreadable file leaves the session without one, and the parent's 407 reaches the client.
        configuration.upstreamProxyCredential = upstreamProxyCredentials.flatMap { credentials in
            credentials.password.readPassword().map { Credential(user: credentials.user, password: $0, persistence: .forSession) }
        }
        configuration.userAgent = nil
        // The proxy relays a server-push body whole; its client splits the parts.
        configuration.deliversMultipartReplaceParts = false
        return configuration
    }
}

extension PolicyConfiguration {
    /// The configuration of every named session, `default` included.
    public func sessionConfigurations() -> [String: SessionConfiguration] {
        var result: [String: SessionConfiguration] = [:]
        for name in sessionNames {
            result[name] = session(named: name)?.makeSessionConfiguration(name: name)
        }
        return result
    }
}
