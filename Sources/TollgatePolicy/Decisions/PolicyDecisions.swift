public import Foundation
public import TollgateHTTP
public import struct TollgateSession.ConnectionTarget
public import struct TollgateSession.ConnectionTargetCheck

/// The policy engine's decisions as pure functions of a configuration: which rule and session
/// a request gets, and the answers the policy delegate gives the session for it (cache or not,
/// follow redirects or not, trust, credentials, added headers, parent proxy, deny).
///
/// No I/O and no clock of its own: time-dependent answers (pin expiry) take `now`. The session
/// delegate of the proxy calls these; `tollgate explain` prints them (``explain(_:now:)``).
public struct PolicyDecisions: Sendable {
    /// The configuration and matcher, shared by every copy: the session delegate hands out its
    /// decisions per request, and copying the whole configuration each time was a measurable
    /// part of a cache hit's reference counting.
    private final class Storage: @unchecked Sendable {
        // @unchecked: `decided` is only touched while holding `lock`.
        let configuration: PolicyConfiguration
        let matcher: HostRuleMatcher
        /// Each session's `connect-to-check`s (``PolicyDecisions/connectionTargetChecks(session:)``),
        /// worked out once: every session's checker asks ten times a second.
        let targetChecks: [String: [ConnectionTargetCheck]]
        /// Decisions made, by host and port, each with the times it holds for (a rule's pins
        /// expiring divides them); the proxy asks once per request, mostly for a few hosts.
        private var decided: [HostAndPort: (decision: PolicyDecision, holds: Range<Date>)] = [:]
        private let lock = NSLock()

        init(configuration: PolicyConfiguration) {
            self.configuration = configuration
            self.matcher = HostRuleMatcher(rules: configuration.hosts)
            self.targetChecks = Self.targetChecks(configuration.hosts)
        }

        /// For each session, the `connect-to` targets of its rules that ask for health checks,
        /// each once with the shortest interval asked for it, in the order the rules name them;
        /// a target several rules check is checked as the first of them asks (its probe, `fall`, `rise`).
        private static func targetChecks(_ rules: [HostRule]) -> [String: [ConnectionTargetCheck]] {
            var bySession: [String: [ConnectionTargetCheck]] = [:]
            for rule in rules {
                guard let interval = rule.connectToCheck else { continue }
                var checks = bySession[rule.session] ?? []
                for target in rule.connectTo {
                    if let index = checks.firstIndex(where: { $0.target == target }) {
                        checks[index].interval = min(checks[index].interval, interval)
                    } else {
                        checks.append(
                            ConnectionTargetCheck(
                                target: target, interval: interval, probe: rule.connectToCheckProbe,
                                fall: rule.connectToCheckFall, rise: rule.connectToCheckRise, timeout: rule.connectToCheckTimeout
                            )
                        )
                    }
                }
                bySession[rule.session] = checks
            }
            return bySession
        }

        /// The decision remembered for `key` if it holds at `now` (the clock is read only for a
        /// decision that does not hold for all time: one whose rule's pins expire).
        func remembered(_ key: HostAndPort, now: Date?) -> (decision: PolicyDecision, holds: Range<Date>)? {
            lock.lock()
            defer { lock.unlock() }
            guard let entry = decided[key] else { return nil }
            guard PolicyDecisions.holds(entry.holds, at: now) else { return nil }
            return entry
        }

        func remember(_ decision: PolicyDecision, for key: HostAndPort, holds: Range<Date>) {
            lock.lock()
            defer { lock.unlock() }
            if decided.count >= 1024 { decided.removeAll(keepingCapacity: true) }
            decided[key] = (decision, holds)
        }
    }

    private struct HostAndPort: Hashable {
        let host: String
        let port: Int
    }

    private let storage: Storage

    /// The configuration decided from.
    public var configuration: PolicyConfiguration {
        _read { yield storage.configuration }
    }
    /// The host rules' matcher.
    public var matcher: HostRuleMatcher {
        _read { yield storage.matcher }
    }

    /// Decisions from `configuration`.
    public init(configuration: PolicyConfiguration) {
        self.storage = Storage(configuration: configuration)
    }

    /// Everything decided for a request to `url`.
    /// `now`: the time to decide at (nil: the clock's, read only when a decision depends on it).
    public func decide(for url: HTTPURL, now: Date? = nil) -> PolicyDecision {
        decide(host: url.host, port: url.effectivePort, now: now)
    }

    /// Everything decided for `host` on `port` (a CONNECT target has no URL).
    public func decide(host: String, port: Int, now: Date? = nil) -> PolicyDecision {
        decideWithValidity(host: host, port: port, now: now).decision
    }

    /// The times a decision holds for when it never changes (no rule's pins expire).
    public static let always = Date.distantPast..<Date.distantFuture

    /// Whether a decision that holds for `holds` still holds at `now` (nil: the clock, read only
    /// when `holds` is not ``always``).
    public static func holds(_ holds: Range<Date>, at now: Date? = nil) -> Bool {
        holds == always || holds.contains(now ?? Date())
    }

    /// ``decide(host:port:now:)``, and the times that decision holds for: ``always``, or until
    /// (from) the moment the matching rule's pins expire. What a caller that keeps the decision
    /// checks before using it again.
    public func decideWithValidity(host: String, port: Int, now: Date? = nil) -> (decision: PolicyDecision, holds: Range<Date>) {
        let key = HostAndPort(host: host, port: port)
        if let known = storage.remembered(key, now: now) { return known }
        let now = now ?? Date()
        let (decision, holds) = makeDecision(host: host, port: port, now: now)
        storage.remember(decision, for: key, holds: holds)
        return (decision, holds)
    }

    /// The decision for `host` on `port` at `now`, and the times it holds for: until the
    /// matching rule's pins expire when `now` is before that, from then on when it is after,
    /// always when they never expire.
    private func makeDecision(host: String, port: Int, now: Date) -> (PolicyDecision, holds: Range<Date>) {
        let match = matcher.firstMatch(host: host, port: port)
        let rule = match?.rule ?? HostRule(patterns: [])
        // A rule naming an undeclared session does not load; this fallback only serves models built in code.
        let sessionName = configuration.session(named: rule.session) == nil ? SessionSettings.defaultName : rule.session
        let session = configuration.session(named: sessionName) ?? SessionSettings()
        let pinMode = rule.trust.effectivePinMode(at: now)
        let decision = PolicyDecision(
            rule: match.map {
                PolicyDecision.MatchedRule(
                    index: $0.index,
                    firstPattern: $0.rule.patterns.first ?? $0.pattern,
                    matchedPattern: $0.pattern,
                    line: $0.rule.sourceLine
                )
            },
            sessionName: sessionName,
            session: session,
            deny: rule.trust.deny,
            cache: rule.cache,
            redirects: session.redirects,
            additionalHeaders: session.headers,
            upstreamProxy: session.upstreamProxy,
            trust: PolicyDecision.TrustSummary(
                roots: rule.trust.roots,
                crls: rule.trust.crls,
                pins: rule.trust.pins,
                pinMode: pinMode,
                pinsExpired: !rule.trust.pins.isEmpty && pinMode != rule.trust.pinMode,
                insecure: rule.trust.insecure,
                ocsp: rule.trust.ocsp
            ),
            clientIdentity: rule.clientIdentity,
            credentials: rule.credentials.map {
                PolicyDecision.CredentialSummary(
                    realm: $0.realm,
                    user: $0.user,
                    source: $0.password,
                    persistence: $0.persistence
                )
            },
            intercept: rule.intercept,
            http2: rule.http2,
            requestHeaders: rule.requestHeaders,
            responseHeaders: responseHeaders(rule),
            mapLocal: rule.mapLocal,
            compress: rule.compress,
            mapRemote: rule.mapRemote,
            connectTo: rule.connectTo
        )
        let holds: Range<Date>
        if let expiry = rule.trust.pinsExpire {
            holds = now < expiry ? Date.distantPast..<expiry : expiry..<Date.distantFuture
        } else {
            holds = Self.always
        }
        return (decision, holds)
    }

    /// The rule's `response-headers`, and the removal of `cache.tag-header` from what clients get
    /// (the tags are the cache's, as a CDN's surrogate keys are).
    private func responseHeaders(_ rule: HostRule) -> HostRule.HeaderEdits {
        var edits = rule.responseHeaders
        if let tagHeader = configuration.cache.tagHeader, !edits.remove.contains(where: { $0.lowercased() == tagHeader.lowercased() }) {
            edits.remove.append(tagHeader)
        }
        return edits
    }

    /// The `willCacheResponse` answer for a response to `url` that the HTTP caching rules allow.
    public func cacheStoreDecision(for url: HTTPURL) -> CacheStoreDecision {
        decide(for: url).cacheStore
    }

    /// The `connect-to` targets of the rules of session `name` that ask for health checks
    /// (`connect-to-check`), each once with the shortest interval asked for it.
    public func connectionTargetChecks(session name: String) -> [ConnectionTargetCheck] {
        storage.targetChecks[name] ?? []
    }

    /// The URL a response to `url` is cached under (the rule's `cache.key` normalization).
    public func cacheKeyURL(for url: HTTPURL) -> HTTPURL {
        // From the remembered decision (a rule's cache settings are in it): no second match.
        let decision = decide(for: url)
        return decision.rule == nil ? url : decision.cache.key.normalize(url)
    }

    /// Whether the session follows a redirect from `original` (the request's URL, whose rule and
    /// session decide) to `location`.
    ///
    /// `follow-same-host` follows when the host is the same (any port) and the scheme does not go
    /// from https to http; anything else is passed to the client.
    public func redirectAction(from original: HTTPURL, to location: HTTPURL) -> RedirectAction {
        switch decide(for: original).redirects {
        case .pass:
            return .pass
        case .follow:
            return .follow
        case .followSameHost:
            let sameHost = HostPattern.normalizedHost(original.host) == HostPattern.normalizedHost(location.host)
            let downgrade = original.isSecure && !location.isSecure
            return sameHost && !downgrade ? .follow : .pass
        }
    }
}
