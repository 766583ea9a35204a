import Foundation
public import TollgateHTTP
public import TollgateSession
public import TollgateTLS

/// What the policy decides for one host (and URL): the answers of the policy delegate, computed
/// from the first matching host rule and its session. A plain value, printable without secrets:
/// passwords are never in it, only where they come from.
public struct PolicyDecision: Sendable {
    /// The rule that matched.
    public struct MatchedRule: Sendable, CustomStringConvertible {
        /// Its position in `hosts` (0-based).
        public var index: Int
        /// Its first pattern, the name logs use for the rule.
        public var firstPattern: HostPattern
        /// The pattern that matched (a rule may list several).
        public var matchedPattern: HostPattern
        /// The line the rule starts on, when it came from a file.
        public var line: Int?

        /// `hosts[2] (*.example.com)`.
        public var description: String { "hosts[\(index)] (\(firstPattern))" }
    }

    /// Trust as it applies now (pins past `pins-expire` are report-only).
    public struct TrustSummary: Sendable {
        /// The trust anchors.
        public var roots: HostRule.Trust.Roots
        /// The rule's own pins; empty means no pinning.
        public var pins: [SPKIPin]
        /// The pin mode in force: the configured one, or report once the pins expired.
        public var pinMode: HostRule.Trust.PinMode
        /// Whether the pins are past their `pins-expire`.
        public var pinsExpired: Bool
        /// No verification at all.
        public var insecure: Bool
    }

    /// A credential without its password.
    public struct CredentialSummary: Sendable, CustomStringConvertible {
        /// The realm, or nil for any realm.
        public var realm: String?
        /// The user.
        public var user: String
        /// Where the password comes from (an environment variable's name or a file's path).
        public var source: HostRule.Credential.PasswordSource
        /// How long it is kept.
        public var persistence: HostRule.Credential.Persistence

        /// `realm "R" user alice (password from environment variable X, persistence session)`.
        public var description: String {
            let realmText = realm.map { "realm \"\($0)\"" } ?? "any realm"
            return "\(realmText), user \(user) (password from \(source), persistence \(persistence))"
        }
    }

    /// The rule that matched, or nil when none did (every field then has its default).
    public var rule: MatchedRule?
    /// The session that carries the request.
    public var sessionName: String
    /// That session's settings.
    public var session: SessionSettings
    /// Whether the host is refused (`trust.deny`).
    public var deny: Bool
    /// The `willCacheResponse` answer and the cache key normalization.
    public var cache: HostRule.CacheOverride
    /// What to do with redirects (the session's `redirects`).
    public var redirects: SessionSettings.Redirects
    /// Header fields added to upstream requests (the session's `headers`).
    public var additionalHeaders: HeaderFields
    /// The parent proxy, if any (the session's `upstream-proxy`).
    public var upstreamProxy: UpstreamProxy?
    /// How the server's certificate is checked.
    public var trust: TrustSummary
    /// The client certificate presented, if any.
    public var clientIdentity: HostRule.ClientIdentity?
    /// The credentials that may answer challenges, without passwords.
    public var credentials: [CredentialSummary]
    /// Whether CONNECT tunnels to the host are intercepted.
    public var intercept: Bool

    /// The `willCacheResponse` answer: store with the rule's `force-ttl`, or drop.
    public var cacheStore: CacheStoreDecision {
        cache.store == .deny ? .doNotStore : .store(forceTTL: cache.forceTTL)
    }
}

/// The policy delegate's answer to `willCacheResponse` for a response the HTTP rules let through.
public enum CacheStoreDecision: Hashable, Sendable {
    /// Store it; when `forceTTL` is set, fresh for that long from when it was received.
    case store(forceTTL: Duration?)
    /// Do not store it.
    case doNotStore
}

/// What the session does with one redirect response.
public enum RedirectAction: Hashable, Sendable {
    /// Hand the 3xx response to the client.
    case pass
    /// Follow it to the new URL.
    case follow
}
