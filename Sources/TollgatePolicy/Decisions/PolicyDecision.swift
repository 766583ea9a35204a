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
        public var index: Int {
            didSet { label = Self.label(index, firstPattern) }
        }
        /// Its first pattern, the name logs use for the rule.
        public var firstPattern: HostPattern {
            didSet { label = Self.label(index, firstPattern) }
        }
        /// The pattern that matched (a rule may list several).
        public var matchedPattern: HostPattern
        /// The line the rule starts on, when it came from a file.
        public var line: Int?
        /// `hosts[INDEX]:FIRST-PATTERN`, the rule's name in logs, error bodies and metrics:
        /// formatted once with the decision (which is remembered per host), not per request.
        public private(set) var label: String

        /// A matched rule.
        public init(index: Int, firstPattern: HostPattern, matchedPattern: HostPattern, line: Int?) {
            self.index = index
            self.firstPattern = firstPattern
            self.matchedPattern = matchedPattern
            self.line = line
            self.label = Self.label(index, firstPattern)
        }

        private static func label(_ index: Int, _ pattern: HostPattern) -> String {
            "hosts[\(index)]:\(pattern)"
        }

        /// `hosts[2] (*.example.com)`.
        public var description: String { "hosts[\(index)] (\(firstPattern))" }
    }

    /// Trust as it applies now (pins past `pins-expire` are report-only).
    public struct TrustSummary: Sendable {
        /// The trust anchors.
        public var roots: HostRule.Trust.Roots
        /// The revocation list files checked (`crls`); empty means no revocation check.
        public var crls: [String]
        /// The rule's own pins; empty means no pinning.
        public var pins: [SPKIPin]
        /// The pin mode in force: the configured one, or report once the pins expired.
        public var pinMode: HostRule.Trust.PinMode
        /// Whether the pins are past their `pins-expire`.
        public var pinsExpired: Bool
        /// No verification at all.
        public var insecure: Bool
        /// What the server's stapled OCSP response must say.
        public var ocsp: HostRule.Trust.OCSPCheck = .off
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

    // One copy-on-write box: a decision is remembered per host and copied into every request's
    // route and record; a copy is then one retain.
    private struct Parts: Sendable {
        var rule: MatchedRule?
        var sessionName: String
        var session: SessionSettings
        var deny: Bool
        var cache: HostRule.CacheOverride
        var redirects: SessionSettings.Redirects
        var additionalHeaders: HeaderFields
        var upstreamProxy: UpstreamProxy?
        var trust: TrustSummary
        var clientIdentity: HostRule.ClientIdentity?
        var credentials: [CredentialSummary]
        var intercept: Bool
        var http2: HostRule.HTTP2Use
        var connectTo: [ConnectionTarget]
        var requestHeaders: HostRule.HeaderEdits
        var responseHeaders: HostRule.HeaderEdits
        var mapLocal: [HostRule.LocalMapping]
        var compress: HostRule.Compression?
        var mapRemote: [HostRule.RemoteMapping]
    }

    @CopyOnWrite private var parts: Parts

    /// The rule that matched, or nil when none did (every field then has its default).
    public var rule: MatchedRule? {
        _read { yield parts.rule }
        _modify { yield &parts.rule }
    }

    /// The session that carries the request.
    public var sessionName: String {
        _read { yield parts.sessionName }
        _modify { yield &parts.sessionName }
    }

    /// That session's settings.
    public var session: SessionSettings {
        _read { yield parts.session }
        _modify { yield &parts.session }
    }

    /// Whether the host is refused (`trust.deny`).
    public var deny: Bool {
        _read { yield parts.deny }
        _modify { yield &parts.deny }
    }

    /// The `willCacheResponse` answer and the cache key normalization.
    public var cache: HostRule.CacheOverride {
        _read { yield parts.cache }
        _modify { yield &parts.cache }
    }

    /// What to do with redirects (the session's `redirects`).
    public var redirects: SessionSettings.Redirects {
        _read { yield parts.redirects }
        _modify { yield &parts.redirects }
    }

    /// Header fields added to upstream requests (the session's `headers`).
    public var additionalHeaders: HeaderFields {
        _read { yield parts.additionalHeaders }
        _modify { yield &parts.additionalHeaders }
    }

    /// The parent proxy, if any (the session's `upstream-proxy`).
    public var upstreamProxy: UpstreamProxy? {
        _read { yield parts.upstreamProxy }
        _modify { yield &parts.upstreamProxy }
    }

    /// How the server's certificate is checked.
    public var trust: TrustSummary {
        _read { yield parts.trust }
        _modify { yield &parts.trust }
    }

    /// The client certificate presented, if any.
    public var clientIdentity: HostRule.ClientIdentity? {
        _read { yield parts.clientIdentity }
        _modify { yield &parts.clientIdentity }
    }

    /// The credentials that may answer challenges, without passwords.
    public var credentials: [CredentialSummary] {
        _read { yield parts.credentials }
        _modify { yield &parts.credentials }
    }

    /// Whether CONNECT tunnels to the host are intercepted.
    public var intercept: Bool {
        _read { yield parts.intercept }
        _modify { yield &parts.intercept }
    }

    /// Whether the host's https origins are offered HTTP/2.
    public var http2: HostRule.HTTP2Use {
        _read { yield parts.http2 }
        _modify { yield &parts.http2 }
    }

    /// Where the host's connections are made instead of its own addresses (`connect-to`); empty
    /// for the host itself.
    public var connectTo: [ConnectionTarget] {
        _read { yield parts.connectTo }
        _modify { yield &parts.connectTo }
    }

    /// Changes to the request's header fields as it goes upstream (the rule's `request-headers`).
    public var requestHeaders: HostRule.HeaderEdits {
        _read { yield parts.requestHeaders }
        _modify { yield &parts.requestHeaders }
    }

    /// Changes to the response's header fields as it goes to the client (the rule's `response-headers`).
    public var responseHeaders: HostRule.HeaderEdits {
        _read { yield parts.responseHeaders }
        _modify { yield &parts.responseHeaders }
    }

    /// Paths answered from local files (the rule's `map-local`).
    public var mapLocal: [HostRule.LocalMapping] {
        _read { yield parts.mapLocal }
        _modify { yield &parts.mapLocal }
    }

    /// Paths sent to other URLs (the rule's `map-remote`).
    public var mapRemote: [HostRule.RemoteMapping] {
        _read { yield parts.mapRemote }
        _modify { yield &parts.mapRemote }
    }

    /// Responses compressed for clients that accept gzip (the rule's `compress`).
    public var compress: HostRule.Compression? {
        _read { yield parts.compress }
        _modify { yield &parts.compress }
    }

    /// A decision of these parts.
    init(
        rule: MatchedRule?,
        sessionName: String,
        session: SessionSettings,
        deny: Bool,
        cache: HostRule.CacheOverride,
        redirects: SessionSettings.Redirects,
        additionalHeaders: HeaderFields,
        upstreamProxy: UpstreamProxy?,
        trust: TrustSummary,
        clientIdentity: HostRule.ClientIdentity?,
        credentials: [CredentialSummary],
        intercept: Bool,
        http2: HostRule.HTTP2Use = .auto,
        requestHeaders: HostRule.HeaderEdits = HostRule.HeaderEdits(),
        responseHeaders: HostRule.HeaderEdits = HostRule.HeaderEdits(),
        mapLocal: [HostRule.LocalMapping] = [],
        compress: HostRule.Compression? = nil,
        mapRemote: [HostRule.RemoteMapping] = [],
        connectTo: [ConnectionTarget] = []
    ) {
        _parts = CopyOnWrite(
            wrappedValue: Parts(
                rule: rule,
                sessionName: sessionName,
                session: session,
                deny: deny,
                cache: cache,
                redirects: redirects,
                additionalHeaders: additionalHeaders,
                upstreamProxy: upstreamProxy,
                trust: trust,
                clientIdentity: clientIdentity,
                credentials: credentials,
                intercept: intercept,
                http2: http2,
                connectTo: connectTo,
                requestHeaders: requestHeaders,
                responseHeaders: responseHeaders,
                mapLocal: mapLocal,
                compress: compress,
                mapRemote: mapRemote
            )
        )
    }

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
