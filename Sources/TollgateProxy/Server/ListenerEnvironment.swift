import NIOConcurrencyHelpers
import TollgatePolicy

/// What every connection of one listener shares.
struct ListenerEnvironment: Sendable {
    var mode: ListenerMode
    var policy: any ProxyPolicy
    var accessLog: AccessLog
    var metrics: ProxyMetrics
    var ownListeners: OwnListeners
    var authenticators: AuthenticatorCache
    var resolver: AddressResolver
    /// Mints certificates for intercepted CONNECTs; nil: every CONNECT is tunnelled.
    var interceptor: Interceptor?

    /// The destination rules in force now.
    var destinations: DestinationCheck {
        DestinationCheck(access: policy.access, ownListeners: ownListeners, resolver: resolver)
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
