public import Foundation
public import NIOCore
import NIOPosix
public import TollgateHTTP
public import TollgatePolicy
public import TollgateSession

/// Where the proxy gets its rules from, per request: the configuration in force (access, limits)
/// and the session and decision for a URL. ``PolicyRuntime`` is one (rules reloaded on SIGHUP);
/// ``StaticProxyPolicy`` is the fixed one a server uses when given none.
public protocol ProxyPolicy: Sendable {
    /// The configuration in force now.
    var configuration: PolicyConfiguration { get }
    /// The `limits` in force now (read per request: cheaper than copying the whole configuration).
    var limits: PolicyConfiguration.Limits { get }
    /// The `access` rules in force now (read per connection and request).
    var access: PolicyConfiguration.Access { get }
    /// `access.connection-limit` in force now: read for every connection a listener accepts,
    /// so without copying the rest of `access`.
    var connectionLimit: Int? { get }
    /// Changes whenever ``configuration`` may have changed (a reload); constant for fixed rules.
    /// Connections keep what they derive from `access` and `limits` until it changes
    /// (``ExchangeRules``).
    var generation: Int { get }
    /// The session and decision for a request to `url`. A route whose ``ProxyRoute/holds`` is
    /// set depends only on the URL's host and port: a connection uses it again for its next
    /// requests to them within that time, until ``generation`` changes.
    func proxyRoute(for url: HTTPURL) -> ProxyRoute
    /// The session and decision for a CONNECT tunnel to `host:port`.
    func proxyRoute(forTunnelTo host: String, port: Int) -> ProxyRoute
}

extension ProxyPolicy {
    public var limits: PolicyConfiguration.Limits { configuration.limits }
    public var access: PolicyConfiguration.Access { configuration.access }
    public var connectionLimit: Int? { access.connectionLimit }
    /// Fixed rules: always 0.
    public var generation: Int { 0 }

    /// The route of `https://host:port/`.
    public func proxyRoute(forTunnelTo host: String, port: Int) -> ProxyRoute {
        proxyRoute(for: HTTPURL(scheme: "https", host: host, port: port))
    }
}

/// Where one request goes: the session whose task carries it and what the rules decided.
///
/// A class: a route is handed from the connection (which keeps it, ``KeptRoute``) to the
/// exchange and its record, and each hand-over of a struct retained every string in it.
public final class ProxyRoute: Sendable {
    /// The session the task is created on.
    public let session: Session
    /// Its name, for the access log and `/tasks`.
    public let sessionName: String
    /// Whether a host rule refuses the host (403 `host-denied`, no task created).
    public let isDenied: Bool
    /// The matching rule for the access log (`hosts[2]:*.example.com`), or `-`.
    public let ruleLabel: String
    /// Whether a CONNECT to the host is intercepted (`intercept: true`) rather than tunnelled.
    public let intercepts: Bool
    /// The times this route holds for any URL of the same host and port, while the policy's
    /// ``ProxyPolicy/generation`` stays; nil: it is asked for again for every request.
    public let holds: Range<Date>?
    /// Whether the host's connections go to `connect-to` targets, not to its own addresses: the
    /// destination rules are then checked on each target's addresses as it is connected to, not
    /// on the name's before the task.
    public let connectsElsewhere: Bool
    /// Changes to the request's header fields as it goes upstream (`request-headers`); nil for none.
    public let requestHeaders: HostRule.HeaderEdits?
    /// Changes to the response's header fields as it goes to the client (`response-headers`); nil for none.
    public let responseHeaders: HostRule.HeaderEdits?
    /// Paths answered from local files (`map-local`); nil for none.
    public let mapLocal: [HostRule.LocalMapping]?
    /// Responses compressed with gzip for clients that accept it (`compress`); nil for none.
    public let compress: HostRule.Compression?
    /// Paths sent to other URLs (`map-remote`); nil for none.
    public let mapRemote: [HostRule.RemoteMapping]?

    /// Creates a route.
    public init(
        session: Session,
        sessionName: String,
        isDenied: Bool = false,
        ruleLabel: String = "-",
        intercepts: Bool = false,
        holds: Range<Date>? = nil,
        connectsElsewhere: Bool = false,
        requestHeaders: HostRule.HeaderEdits? = nil,
        responseHeaders: HostRule.HeaderEdits? = nil,
        mapLocal: [HostRule.LocalMapping] = [],
        compress: HostRule.Compression? = nil,
        mapRemote: [HostRule.RemoteMapping] = []
    ) {
        self.mapRemote = mapRemote.isEmpty ? nil : mapRemote
        self.mapLocal = mapLocal.isEmpty ? nil : mapLocal
        self.compress = compress
        self.session = session
        self.sessionName = sessionName
        self.isDenied = isDenied
        self.ruleLabel = ruleLabel
        self.intercepts = intercepts
        self.holds = holds
        self.connectsElsewhere = connectsElsewhere
        self.requestHeaders = requestHeaders.flatMap { $0.isEmpty ? nil : $0 }
        self.responseHeaders = responseHeaders.flatMap { $0.isEmpty ? nil : $0 }
    }
}

/// One session for every request and a fixed configuration: what a server uses when it is given
/// no policy, and what tests use to set access rules or limits.
public struct StaticProxyPolicy: ProxyPolicy {
    /// The session every request goes to.
    public let session: Session
    /// The configuration (only `access` and `limits` matter to the proxy).
    public let configuration: PolicyConfiguration

    /// Creates a policy.
    public init(session: Session, configuration: PolicyConfiguration = PolicyConfiguration()) {
        self.session = session
        self.configuration = configuration
    }

    /// A policy with a session of its own, configured as a server's own session
    /// (``ProxyServer/defaultSessionConfiguration``, redirects passed to the client); invalidate
    /// it when done.
    public init(
        configuration: PolicyConfiguration,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) {
        self.init(
            session: Session(
                configuration: ProxyServer.defaultSessionConfiguration,
                delegate: PassRedirectsDelegate(),
                eventLoopGroup: eventLoopGroup
            ),
            configuration: configuration
        )
    }

    public func proxyRoute(for url: HTTPURL) -> ProxyRoute {
        ProxyRoute(session: session, sessionName: SessionSettings.defaultName, holds: PolicyDecisions.always)
    }
}
