import Foundation
import Testing
import TollgateCache
import TollgateHTTP
import TollgatePolicy
import TollgateSession

@Suite(.timeLimit(.minutes(1)))
struct PolicyDecisionsTests {
    static let yaml = """
        sessions:
          default:
            headers: { X-Team: web }
          ci:
            configuration: background
            cache-policy: return-cache-else-load
            timeout-request: 30s
            timeout-resource: 2h
            max-connections-per-host: 2
            cookies: jar
            cookie-accept: always
            redirects: follow-same-host
            upstream-proxy: "http://parent.example:3128"
            headers: { X-Build: "42", Authorization: "Bearer secret-token" }
          fresh:
            configuration: ephemeral
            redirects: follow
        hosts:
          - match: ["api.example.com", "api.example.org"]
            session: ci
            trust:
              roots: [system, "/etc/ssl/partner.pem"]
              pins: ["sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="]
              pins-expire: 2030-01-01
            client-identity: { certificate: id.pem, key: id.key }
            credentials:
              - { realm: "Restricted", user: alice, password-env: ALICE_PASS }
              - { user: bob, password-file: bob.pass, persistence: permanent }
            cache:
              force-ttl: 10m
              key: { drop-query: [sig, utm_*], sort-query: true }
          - match: "blocked.example.com"
            trust: { deny: true }
            cache: { store: deny }
          - match: "**.example.com"
            session: fresh
            intercept: true
            trust: { insecure: true, pin-mode: report }
        """

    static func decisions() throws -> PolicyDecisions {
        PolicyDecisions(configuration: try Fixture.load(yaml))
    }

    static func url(_ text: String) throws -> HTTPURL { try #require(HTTPURL(string: text)) }

    @Test func theMatchingRuleChoosesTheSessionAndItsAnswers() throws {
        let decision = try Self.decisions().decide(for: Self.url("https://api.example.org/v1/items?id=3"))
        #expect(decision.rule?.index == 0)
        #expect(decision.rule?.firstPattern.description == "api.example.com")
        #expect(decision.rule?.matchedPattern.description == "api.example.org")
        #expect(decision.rule?.line == 19)
        #expect(decision.sessionName == "ci")
        #expect(decision.redirects == .followSameHost)
        #expect(decision.additionalHeaders["X-Build"] == "42")
        #expect(decision.upstreamProxy == UpstreamProxy(host: "parent.example", port: 3128))
        #expect(!decision.deny)
        #expect(!decision.intercept)
        #expect(decision.cacheStore == .store(forceTTL: .seconds(600)))
        #expect(decision.trust.roots == HostRule.Trust.Roots(includesSystem: true, bundles: ["/etc/ssl/partner.pem"]))
        #expect(decision.trust.pins.count == 1)
        #expect(decision.trust.pinMode == .enforce)
        #expect(
            decision.clientIdentity
                == HostRule.ClientIdentity(certificate: "/etc/tollgate/id.pem", key: "/etc/tollgate/id.key")
        )
        #expect(
            decision.credentials.map(\.description) == [
                #"realm "Restricted", user alice (password from environment variable ALICE_PASS, persistence session)"#,
                "any realm, user bob (password from file /etc/tollgate/bob.pass, persistence permanent)",
            ]
        )
    }

    @Test func aHostNoRuleMatchesGetsTheDefaults() throws {
        let decision = try Self.decisions().decide(for: Self.url("http://other.net/"))
        #expect(decision.rule == nil)
        #expect(decision.sessionName == "default")
        #expect(decision.additionalHeaders["X-Team"] == "web")
        #expect(decision.redirects == .pass)
        #expect(decision.cacheStore == .store(forceTTL: nil))
        #expect(decision.trust.roots == .system)
        #expect(decision.trust.pins.isEmpty)
        #expect(!decision.trust.insecure)
        #expect(decision.credentials.isEmpty)
        #expect(decision.clientIdentity == nil)
        #expect(decision.upstreamProxy == nil)
    }

    @Test func denyAndStoreDenyComeFromTheRule() throws {
        let decisions = try Self.decisions()
        let blocked = decisions.decide(for: try Self.url("https://blocked.example.com/"))
        #expect(blocked.deny)
        #expect(blocked.cacheStore == .doNotStore)
        #expect(decisions.cacheStoreDecision(for: try Self.url("https://blocked.example.com/x")) == .doNotStore)
        let wildcard = decisions.decide(host: "www.example.com", port: 443)
        #expect(wildcard.rule?.index == 2)
        #expect(wildcard.intercept)
        #expect(wildcard.trust.insecure)
        #expect(wildcard.trust.pinMode == .report)
    }

    @Test func pinsPastTheirExpiryAreOnlyReported() throws {
        let decisions = try Self.decisions()
        let url = try Self.url("https://api.example.com/")
        let before = decisions.decide(for: url, now: Date(timeIntervalSince1970: 1_800_000_000))  // 2027
        #expect(before.trust.pinMode == .enforce)
        #expect(!before.trust.pinsExpired)
        let after = decisions.decide(for: url, now: Date(timeIntervalSince1970: 1_900_000_000))  // 2030-03
        #expect(after.trust.pinMode == .report)
        #expect(after.trust.pinsExpired)
        // Asked again in either order (decisions are remembered per host, for the times they hold).
        #expect(decisions.decide(for: url, now: Date(timeIntervalSince1970: 1_900_000_001)).trust.pinMode == .report)
        #expect(decisions.decide(for: url, now: Date(timeIntervalSince1970: 1_800_000_001)).trust.pinMode == .enforce)
        let fresh = try Self.decisions()
        #expect(fresh.decide(for: url, now: Date(timeIntervalSince1970: 1_900_000_000)).trust.pinMode == .report)
        #expect(fresh.decide(for: url, now: Date(timeIntervalSince1970: 1_800_000_000)).trust.pinMode == .enforce)
        #expect(fresh.decide(for: url, now: Date(timeIntervalSince1970: 1_900_000_000)).trust.pinMode == .report)
        // The times each decision holds for end (or start) at the expiry; a rule without pins holds always.
        let early = decisions.decideWithValidity(host: "api.example.com", port: 443, now: Date(timeIntervalSince1970: 1_800_000_000))
        let late = decisions.decideWithValidity(host: "api.example.com", port: 443, now: Date(timeIntervalSince1970: 1_900_000_000))
        #expect(early.holds.lowerBound == .distantPast && early.holds.upperBound < Date(timeIntervalSince1970: 1_900_000_000))
        #expect(late.holds.lowerBound == early.holds.upperBound && late.holds.upperBound == .distantFuture)
        #expect(decisions.decideWithValidity(host: "other.example", port: 443).holds == PolicyDecisions.always)
    }

    @Test func redirectsFollowTheSessionOfTheOriginalRequest() throws {
        let decisions = try Self.decisions()
        let api = try Self.url("https://api.example.com/a")
        #expect(decisions.redirectAction(from: api, to: try Self.url("https://API.example.com:8443/b")) == .follow)
        #expect(decisions.redirectAction(from: api, to: try Self.url("https://cdn.example.com/b")) == .pass)
        #expect(decisions.redirectAction(from: api, to: try Self.url("http://api.example.com/b")) == .pass)
        let http = try Self.url("http://api.example.com/a")
        #expect(decisions.redirectAction(from: http, to: try Self.url("https://api.example.com/a")) == .follow)
        let fresh = try Self.url("https://www.example.com/")
        #expect(decisions.redirectAction(from: fresh, to: try Self.url("http://elsewhere.net/")) == .follow)
        let other = try Self.url("https://other.net/")
        #expect(decisions.redirectAction(from: other, to: try Self.url("https://other.net/b")) == .pass)
    }

    @Test func theCacheKeyIsNormalizedByTheRule() throws {
        let decisions = try Self.decisions()
        let url = try Self.url("https://api.example.com/f?z=1&sig=abc&utm_source=x&a=2&z=0")
        #expect(decisions.cacheKeyURL(for: url).absoluteString == "https://api.example.com/f?a=2&z=1&z=0")
        let untouched = try Self.url("https://other.net/f?sig=abc")
        #expect(decisions.cacheKeyURL(for: untouched) == untouched)
    }

    @Test func sessionSettingsBecomeASessionConfiguration() throws {
        let configurations = try Fixture.load(Self.yaml).sessionConfigurations()
        #expect(Set(configurations.keys) == ["default", "ci", "fresh"])
        let ci = try #require(configurations["ci"])
        #expect(ci.kind.backgroundIdentifier == "ci")
        #expect(ci.requestCachePolicy == .returnCacheElseLoad)
        #expect(ci.timeoutIntervalForRequest == .seconds(30))
        #expect(ci.timeoutIntervalForResource == .seconds(7200))
        #expect(ci.httpMaximumConnectionsPerHost == 2)
        #expect(ci.httpShouldSetCookies)
        #expect(ci.httpCookieAcceptPolicy == .always)
        #expect(ci.upstreamProxy == UpstreamProxy(host: "parent.example", port: 3128))
        #expect(ci.httpAdditionalHeaders["X-Build"] == "42")
        #expect(ci.userAgent == nil)
        let fresh = try #require(configurations["fresh"])
        #expect(fresh.kind.isEphemeral)
        #expect(!fresh.httpShouldSetCookies)
        #expect(fresh.httpCookieAcceptPolicy == .onlyFromMainDocumentDomain)
        let standard = try #require(configurations["default"])
        #expect(standard.kind.description == "default")
        #expect(standard.requestCachePolicy == .protocol)
        #expect(standard.timeoutIntervalForRequest == .seconds(60))
        #expect(standard.timeoutIntervalForResource == .seconds(7 * 86400))
        #expect(standard.httpMaximumConnectionsPerHost == 256)
    }

    @Test func explainPrintsOneItemPerLineAndNoSecrets() throws {
        let text = try Self.decisions().explain(
            Self.url("https://api.example.com/v1?sig=1&b=2"),
            now: Date(timeIntervalSince1970: 1_800_000_000)
        )
        #expect(
            text == """
                url: https://api.example.com/v1?sig=1&b=2
                rule: hosts[0] "api.example.com", line 19
                session: ci (configuration background, cache-policy return-cache-else-load, cookies jar)
                deny: no
                cache: store allow, force-ttl 10m
                cache-key: drop-query [sig, utm_*], sort-query -> https://api.example.com/v1?b=2
                trust: roots system, /etc/ssl/partner.pem, pins [sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=] enforce
                client-identity: certificate /etc/tollgate/id.pem, key /etc/tollgate/id.key
                redirects: follow-same-host
                upstream-proxy: parent.example:3128
                headers: X-Build: 42; Authorization: (hidden)
                credentials: realm "Restricted", user alice (password from environment variable ALICE_PASS, persistence session)
                credentials: any realm, user bob (password from file /etc/tollgate/bob.pass, persistence permanent)
                intercept: no
                """
        )
        #expect(!text.contains("secret-token"))
    }

    @Test func explainSaysWhenNoRuleMatches() throws {
        let text = PolicyDecisions(configuration: PolicyConfiguration()).explain(try Self.url("http://a.example/"))
        #expect(text.contains("rule: none matches; defaults apply"))
        #expect(text.contains("session: default (configuration default, cache-policy protocol, cookies passthrough)"))
        #expect(text.contains("trust: roots system, no pins"))
        #expect(text.contains("cache: store allow (as the HTTP caching rules allow)"))
    }
}

@Suite(.timeLimit(.minutes(1)))
struct CacheKeyNormalizationTests {
    static func normalize(_ url: String, _ normalization: CacheKeyNormalization) throws -> String {
        normalization.normalize(try #require(HTTPURL(string: url))).absoluteString
    }

    @Test func theIdentityChangesNothing() throws {
        #expect(try Self.normalize("http://a/p?b=1&a=2", CacheKeyNormalization()) == "http://a/p?b=1&a=2")
    }

    @Test func droppedParametersGoAndTheRestKeepTheirOrder() throws {
        let drop = CacheKeyNormalization(dropQuery: ["sig", "utm_*"])
        #expect(try Self.normalize("http://a/p?b=1&sig=x&a=2&utm_x=3&utm=4", drop) == "http://a/p?b=1&a=2&utm=4")
        #expect(try Self.normalize("http://a/p?sig=x", drop) == "http://a/p")
        #expect(try Self.normalize("http://a/p?SIG=x", drop) == "http://a/p?SIG=x")
        #expect(try Self.normalize("http://a/p?sig", drop) == "http://a/p")
        #expect(try Self.normalize("http://a/p", drop) == "http://a/p")
    }

    @Test func sortingIsByNameAndStableForRepeatedNames() throws {
        let sort = CacheKeyNormalization(sortQuery: true)
        #expect(try Self.normalize("http://a/p?b=1&a=2&b=0&a=1", sort) == "http://a/p?a=2&a=1&b=1&b=0")
        #expect(try Self.normalize("http://a/p?&&b=1", sort) == "http://a/p?b=1")
    }

    @Test func ignoringTheQueryDropsItAll() throws {
        #expect(try Self.normalize("http://a/p?x=1", CacheKeyNormalization(ignoreQuery: true)) == "http://a/p")
    }
}
