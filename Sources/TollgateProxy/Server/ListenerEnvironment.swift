import NIOConcurrencyHelpers
import NIOCore
import TollgateHTTP
import TollgatePolicy

/// What every connection of one listener shares.
struct ListenerEnvironment: Sendable {
    // One copy-on-write box: every exchange copies the environment, and a copy is then one
    // retain rather than one per shared object.
    private struct Parts: Sendable {
        var mode: ListenerMode
        var policy: any ProxyPolicy
        var accessLog: AccessLog
        var metrics: ProxyMetrics
        var ownListeners: OwnListeners
        var authenticators: AuthenticatorCache
        var resolver: AddressResolver
        var interceptor: Interceptor?
        var offline: OfflineMode
        var exchangesInFlight: ExchangesInFlight
        var memo: ListenerMemo
        var rateLimiter: ClientRateLimiter
        var proxyProtocol: Bool
    }

    @CopyOnWrite private var parts: Parts

    var mode: ListenerMode {
        _read { yield parts.mode }
        _modify { yield &parts.mode }
    }

    var policy: any ProxyPolicy {
        _read { yield parts.policy }
        _modify { yield &parts.policy }
    }

    var accessLog: AccessLog {
        _read { yield parts.accessLog }
        _modify { yield &parts.accessLog }
    }

    var metrics: ProxyMetrics {
        _read { yield parts.metrics }
        _modify { yield &parts.metrics }
    }

    var ownListeners: OwnListeners {
        _read { yield parts.ownListeners }
        _modify { yield &parts.ownListeners }
    }

    var authenticators: AuthenticatorCache {
        _read { yield parts.authenticators }
        _modify { yield &parts.authenticators }
    }

    var resolver: AddressResolver {
        _read { yield parts.resolver }
        _modify { yield &parts.resolver }
    }

    /// Mints certificates for intercepted CONNECTs; nil: every CONNECT is tunnelled.
    var interceptor: Interceptor? {
        _read { yield parts.interceptor }
        _modify { yield &parts.interceptor }
    }

    /// Offline mode: forced or not, the manifest, the miss report.
    var offline: OfflineMode {
        _read { yield parts.offline }
        _modify { yield &parts.offline }
    }

    /// The listener's exchanges that have begun and not finished (a shutdown waits for them).
    var exchangesInFlight: ExchangesInFlight { parts.exchangesInFlight }

    /// What the listener's connections share of their first request's work (rules, last route).
    var memo: ListenerMemo { parts.memo }

    /// The clients' request counts under `access.rate-limit`, shared by the process's listeners.
    var rateLimiter: ClientRateLimiter { parts.rateLimiter }

    /// The client's address on `channel`: the PROXY protocol header's source on a listener that
    /// takes one (``ProxyProtocolHandler``), else the peer's. On the channel's event loop.
    func clientAddress(of channel: any Channel) -> SocketAddress? {
        parts.proxyProtocol ? ProxyProtocolHandler.clientAddress(of: channel) : channel.remoteAddress
    }

    /// An environment of these parts.
    init(
        mode: ListenerMode,
        policy: any ProxyPolicy,
        accessLog: AccessLog,
        metrics: ProxyMetrics,
        ownListeners: OwnListeners,
        authenticators: AuthenticatorCache,
        resolver: AddressResolver,
        interceptor: Interceptor? = nil,
        offline: OfflineMode = OfflineMode(),
        exchangesInFlight: ExchangesInFlight = ExchangesInFlight(),
        rateLimiter: ClientRateLimiter = ClientRateLimiter(),
        proxyProtocol: Bool = false
    ) {
        _parts = CopyOnWrite(
            wrappedValue: Parts(
                mode: mode,
                policy: policy,
                accessLog: accessLog,
                metrics: metrics,
                ownListeners: ownListeners,
                authenticators: authenticators,
                resolver: resolver,
                interceptor: interceptor,
                offline: offline,
                exchangesInFlight: exchangesInFlight,
                memo: ListenerMemo(),
                rateLimiter: rateLimiter,
                proxyProtocol: proxyProtocol
            )
        )
    }
}

/// The proxy authenticator for the users in force, rebuilt when a reload changes them. A
/// rebuild that fails (a password file gone or readable by others) keeps the previous users and
/// says why on standard error.
final class AuthenticatorCache: Sendable {
    private struct Entry {
        var users: [PolicyConfiguration.Access.User]
        var authenticator: ProxyAuthenticator?
    }

    private let policy: any ProxyPolicy
    private let entry: NIOLockedValueBox<Entry>

    /// Reads the users of the policy's configuration now; throws when a password file is bad.
    init(policy: any ProxyPolicy) throws(ProxyAuthenticator.Failure) {
        self.policy = policy
        let users = policy.configuration.access.users
        let authenticator = users.isEmpty ? nil : try ProxyAuthenticator(users: users)
        self.entry = NIOLockedValueBox(Entry(users: users, authenticator: authenticator))
    }

    /// The authenticator for the users in force (nil: no proxy authentication).
    func current() -> ProxyAuthenticator? {
        let users = policy.access.users
        let cached = entry.withLockedValue { $0 }
        if cached.users == users { return cached.authenticator }
        do {
            let fresh = users.isEmpty ? nil : try ProxyAuthenticator(users: users)
            entry.withLockedValue { $0 = Entry(users: users, authenticator: fresh) }
            return fresh
        } catch {
            standardErrorLine("tollgate: access.users not changed: \(error)")
            entry.withLockedValue { $0.users = users }
            return cached.authenticator
        }
    }
}
