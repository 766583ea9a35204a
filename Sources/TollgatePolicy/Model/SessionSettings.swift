public import TollgateCache
public import TollgateHTTP
public import TollgateSession

/// A named session of the policy file (an entry of `sessions`): the settings its
/// ``SessionConfiguration`` is made from (``makeSessionConfiguration()``) plus what the policy
/// delegate decides for its tasks (redirects, cookies).
public struct SessionSettings: Hashable, Sendable {
    /// The name of the session that always exists.
    public static let defaultName = "default"

    /// Where the session's stores live, `SessionConfiguration.Kind`.
    public enum ConfigurationKind: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
        /// Persistent stores in LMDB.
        case `default`
        /// Every store in memory.
        case ephemeral
        /// Persistent, and its tasks are tracked under the session's name.
        case background

        public var description: String { rawValue }
    }

    /// What happens to cookies.
    public enum Cookies: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
        /// The client's Cookie fields and the origin's Set-Cookie fields pass through untouched; the
        /// proxy keeps none.
        case passthrough
        /// The session's cookie store adds and keeps cookies (as URLSession with
        /// `httpShouldSetCookies`).
        case jar

        public var description: String { rawValue }
    }

    /// What the session does with a 3xx response.
    public enum Redirects: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
        /// Hand the redirect to the client unchanged.
        case pass
        /// Follow it (up to the session's redirect limit) and answer with the final response.
        case follow
        /// Follow it when it stays on the same host and does not go from https to http; else pass.
        case followSameHost = "follow-same-host"

        public var description: String { rawValue }
    }

    /// Default, ephemeral or background (`configuration`). Default: default.
    public var configuration: ConfigurationKind = .default
    /// The request cache policy (`cache-policy`, ``RequestCachePolicy``'s raw values). Default: protocol.
    public var cachePolicy: RequestCachePolicy = .protocol
    /// The most a running task may go without a byte (`timeout-request`). Default: 60 s.
    public var timeoutRequest: Duration = .seconds(60)
    /// The most a task may run in all (`timeout-resource`). Default: 7 days.
    public var timeoutResource: Duration = .seconds(7 * 24 * 3600)
    /// Simultaneous connections to one origin (`max-connections-per-host`). Default: 256.
    ///
    /// Not URLSession's 6: a proxy's session serves many clients at once, and behind a small
    /// limit a client waits for other clients' downloads from the same origin to end (and gets
    /// 504 once `limits.upstream-timeout` passes). Squid and Varnish set no such limit by default.
    public var maxConnectionsPerHost: Int = SessionSettings.defaultMaxConnectionsPerHost
    /// The default of ``maxConnectionsPerHost``.
    public static let defaultMaxConnectionsPerHost = 256
    /// Pass cookies through, or keep them in a jar (`cookies`). Default: passthrough.
    public var cookies: Cookies = .passthrough
    /// Which cookies the jar accepts (`cookie-accept`: always, never, main-document-domain).
    /// Default: main-document-domain, as `SessionConfiguration`.
    public var cookieAccept: CookieAcceptPolicy = .onlyFromMainDocumentDomain
    /// Pass, follow, or follow same-host redirects (`redirects`). Default: pass.
    public var redirects: Redirects = .pass
    /// A parent HTTP proxy for every request (`upstream-proxy`, `http://HOST:PORT`, or the first of
    /// a list). Default: nil, direct.
    public var upstreamProxy: UpstreamProxy?
    /// The parents after the first of an `upstream-proxy` list, tried in order when the ones before
    /// cannot be connected to. Default: none.
    public var upstreamProxyFallbacks: [UpstreamProxy] = []
    /// The credential answering the upstream proxy's 407 (`upstream-proxy-credentials`: `user`
    /// and `password-env` or `password-file`). Default: nil, a 407 is not answered.
    public var upstreamProxyCredentials: UpstreamProxyCredentials?
    /// Header fields added to every upstream request that does not set them (`headers`). Default: none.
    public var headers: HeaderFields = [:]

    /// Settings with every field at its default.
    public init() {}
}

/// The user and where the password comes from for an upstream proxy (never the password itself,
/// so the model can be printed).
public struct UpstreamProxyCredentials: Hashable, Sendable, CustomStringConvertible {
    /// The user name (`user`).
    public var user: String
    /// Where the password is read from (`password-env` or `password-file`).
    public var password: HostRule.Credential.PasswordSource

    /// Creates the setting.
    public init(user: String, password: HostRule.Credential.PasswordSource) {
        self.user = user
        self.password = password
    }

    public var description: String { "user \(user), password from \(password)" }
}

extension CookieAcceptPolicy {
    /// The word the policy file uses: `always`, `never`, `main-document-domain`.
    public var configurationWord: String {
        switch self {
        case .always: "always"
        case .never: "never"
        case .onlyFromMainDocumentDomain: "main-document-domain"
        }
    }

    /// The policy for a policy file word, or nil.
    public init?(configurationWord: String) {
        guard let policy = CookieAcceptPolicy.allWords.first(where: { $0.configurationWord == configurationWord })
        else { return nil }
        self = policy
    }

    /// Every policy, in the order documentation lists them.
    static let allWords: [CookieAcceptPolicy] = [.always, .never, .onlyFromMainDocumentDomain]
}
