import Testing
import TollgateHTTP
import TollgateSession
@testable import TollgatePolicy

@Suite("hosts[].connect-to: where a host's connections are made")
struct HostConnectToTests {
    @Test("A HOST:PORT or a list of them reaches the decision, the session's targets and explain; other hosts connect to themselves")
    func readsTheTargets() throws {
        let configuration = try Fixture.load(
            """
            hosts:
              - match: "api.internal"
                connect-to: ["10.0.0.1:8443", "[fd00::2]:8443", "backend.lan:9000"]
              - match: "one.internal"
                connect-to: "127.0.0.1:8080"
            """
        )
        let decisions = PolicyDecisions(configuration: configuration)
        #expect(decisions.decide(host: "api.internal", port: 443).connectTo.map(\.description) == ["10.0.0.1:8443", "[fd00::2]:8443", "backend.lan:9000"])
        #expect(decisions.decide(host: "one.internal", port: 80).connectTo.map(\.description) == ["127.0.0.1:8080"])
        #expect(decisions.decide(host: "other.example", port: 443).connectTo.isEmpty)
        let explained = decisions.explain(try #require(HTTPURL(string: "https://api.internal/v1")))
        #expect(explained.contains("connect-to: 10.0.0.1:8443, [fd00::2]:8443, backend.lan:9000"), "\(explained)")
        #expect(!decisions.explain(try #require(HTTPURL(string: "https://other.example/"))).contains("connect-to"))
    }

    @Test("connect-to-check: each target once per session with the shortest interval, in explain; refused without connect-to or under 100ms")
    func healthChecks() throws {
        let configuration = try Fixture.load(
            """
            sessions:
              gateway: {}
            hosts:
              - match: "api.internal"
                session: gateway
                connect-to: ["10.0.0.1:8443", "10.0.0.2:8443"]
                connect-to-check: 2s
              - match: "admin.internal"
                session: gateway
                connect-to: ["10.0.0.2:8443", "10.0.0.3:8443"]
                connect-to-check: 500ms
              - match: "plain.internal"
                session: gateway
                connect-to: "10.0.0.9:80"
            """
        )
        let decisions = PolicyDecisions(configuration: configuration)
        let checks = decisions.connectionTargetChecks(session: "gateway")
        #expect(checks.map(\.target.description) == ["10.0.0.1:8443", "10.0.0.2:8443", "10.0.0.3:8443"])
        #expect(checks.map(\.interval) == [.seconds(2), .milliseconds(500), .milliseconds(500)])
        #expect(decisions.connectionTargetChecks(session: "default").isEmpty)
        let explained = decisions.explain(try #require(HTTPURL(string: "https://api.internal/")))
        #expect(explained.contains("connect-to-check: every 2s, a TCP connection to each target"), "\(explained)")
        #expect(!decisions.explain(try #require(HTTPURL(string: "https://plain.internal/"))).contains("connect-to-check"))

        let problems = Fixture.problems(
            "hosts:\n  - match: a.example\n    connect-to-check: 1s\n  - match: b.example\n    connect-to: \"10.0.0.1:80\"\n    connect-to-check: 50ms\n"
        )
        #expect(problems.contains { $0.hasPrefix("t.yaml:3: hosts[0].connect-to-check:") && $0.contains("has none") }, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("t.yaml:6: hosts[1].connect-to-check:") && $0.contains("100ms") }, "\(problems)")
    }

    @Test("connect-to-check as a mapping: TLS and an HTTP request, what passes, the name checked as; defaults; in explain")
    func probeChecks() throws {
        let configuration = try Fixture.load(
            """
            hosts:
              - match: ["api.internal", "*.api.internal"]
                connect-to: ["10.0.0.1:8443", "10.0.0.2:8443"]
                connect-to-check: { interval: 500ms, tls: true, request: "HEAD /healthz", expect: 204 }
              - match: "*.web.internal"
                connect-to: "10.0.0.5:80"
                connect-to-check: { request: /ready, host: web.internal, headers: { X-Health-Token: abc } }
              - match: "pinned.internal"
                connect-to: "10.0.0.7:443"
                connect-to-check: { tls: true, expect: "200-299", request: "GET /status?full=1" }
              - match: "tcp.internal"
                connect-to: "10.0.0.9:80"
                connect-to-check: { interval: 1s, fall: 3, rise: 2, timeout: 5s }
            """
        )
        let decisions = PolicyDecisions(configuration: configuration)
        let checks = decisions.connectionTargetChecks(session: "default")
        #expect(checks.map(\.target.description) == ["10.0.0.1:8443", "10.0.0.2:8443", "10.0.0.5:80", "10.0.0.7:443", "10.0.0.9:80"])
        #expect(checks.map(\.interval) == [.milliseconds(500), .milliseconds(500), .seconds(2), .seconds(2), .seconds(1)])
        let api = try #require(checks[0].probe)
        #expect(api == ConnectionTargetProbe(host: "api.internal", tls: true, request: .init(method: .head, path: "/healthz", expectedStatuses: 204...204)))
        #expect(checks[2].probe?.host == "web.internal" && checks[2].probe?.tls == false && checks[2].probe?.request?.path == "/ready")
        #expect(checks[2].probe?.request?.expectedStatuses == 200...399, "HAProxy's default: 2xx and 3xx pass")
        #expect(checks[2].probe?.request?.headerFields == ["X-Health-Token": "abc"])
        #expect(checks[3].probe?.request == .init(method: .get, path: "/status?full=1", expectedStatuses: 200...299))
        #expect(checks[4].probe == nil, "a mapping without tls or request is a TCP check")
        #expect(checks.map(\.fall) == [1, 1, 1, 1, 3] && checks.map(\.rise) == [1, 1, 1, 1, 2], "one check out, one back, unless fall and rise say")
        let tcp = decisions.explain(try #require(HTTPURL(string: "http://tcp.internal/")))
        #expect(tcp.contains("(one that does not accept goes last); out after 3 failed in a row, back after 2 passed in a row; each check within 5s"), "\(tcp)")
        #expect(checks[4].timeout == .seconds(5) && checks[0].timeout == nil)
        let explained = decisions.explain(try #require(HTTPURL(string: "https://api.internal/")))
        #expect(
            explained.contains("connect-to-check: every 500ms, a TLS handshake as api.internal, then HEAD /healthz (Host api.internal) answered 204 at each target"),
            "\(explained)"
        )
    }

    @Test("A connect-to-check mapping's mistakes are problems at their lines")
    func probeCheckProblems() {
        let problems = Fixture.problems(
            """
            hosts:
              - match: "*.a.internal"
                connect-to: "10.0.0.1:80"
                connect-to-check: { tls: true }
              - match: b.internal
                connect-to: "10.0.0.1:80"
                connect-to-check:
                  request: "POST /x"
                  expect: 600
              - match: c.internal
                connect-to: "10.0.0.1:80"
                connect-to-check:
                  expect: 200
                  host: "c.internal:80"
                  intervall: 1s
              - match: d.internal
                connect-to: "10.0.0.1:80"
                connect-to-check: { request: "GET healthz", interval: 10ms }
              - match: e.internal
                connect-to: "10.0.0.1:80"
                connect-to-check: { fall: 0, rise: many }
              - match: f.internal
                connect-to: "10.0.0.1:80"
                connect-to-check: { tls: true, headers: { X-A: b } }
              - match: g.internal
                connect-to: "10.0.0.1:80"
                connect-to-check: { request: /h, headers: { Host: other, "bad name": x }, timeout: 2m }
            """
        )
        #expect(problems.contains { $0.hasPrefix("t.yaml:4: hosts[0].connect-to-check:") && $0.contains("host: NAME") }, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("t.yaml:8: hosts[1].connect-to-check.request:") && $0.contains("GET, HEAD or OPTIONS") }, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("t.yaml:9: hosts[1].connect-to-check.expect:") && $0.contains("100 to 599") }, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("t.yaml:13: hosts[2].connect-to-check.expect:") && $0.contains("add request") }, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("t.yaml:14: hosts[2].connect-to-check.host:") && $0.contains("add tls or request") }, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("t.yaml:15: hosts[2].connect-to-check.intervall:") && $0.contains("interval") }, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("t.yaml:18: hosts[3].connect-to-check.request:") && $0.contains("METHOD /path") }, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("t.yaml:18: hosts[3].connect-to-check:") && $0.contains("100ms") }, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("t.yaml:21: hosts[4].connect-to-check.fall:") && $0.contains("from 1 to 100") }, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("t.yaml:21: hosts[4].connect-to-check.rise:") && $0.contains("a whole number") }, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("t.yaml:24: hosts[5].connect-to-check.headers:") && $0.contains("add request") }, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("t.yaml:27: hosts[6].connect-to-check.headers.Host:") && $0.contains("set by the check itself") }, "\(problems)")
        #expect(problems.contains { $0.contains("hosts[6].connect-to-check.headers") && $0.contains("not a valid header field name") }, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("t.yaml:27: hosts[6].connect-to-check.timeout:") && $0.contains("100ms to 60s") }, "\(problems)")
    }

    @Test("A target without a port, with port 0, or not an address is a problem at its line; so is an empty list")
    func rejectsBadTargets() {
        let problems = Fixture.problems(
            "hosts:\n  - match: a.example\n    connect-to: [\"10.0.0.1\", \"10.0.0.1:0\", \"a b:80\"]\n  - match: b.example\n    connect-to: []\n"
        )
        #expect(problems.contains { $0.hasPrefix("t.yaml:3: hosts[0].connect-to[0]:") && $0.contains("no port") }, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("t.yaml:3: hosts[0].connect-to[1]:") && $0.contains("1 to 65535") }, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("t.yaml:3: hosts[0].connect-to[2]:") && $0.contains("not an IP address or host name") }, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("t.yaml:5: hosts[1].connect-to:") && $0.contains("at least one") }, "\(problems)")
    }

    @Test("weight=N and backup after a target, as nginx's server lines write them: in the decision, explain and the reload's comparison; mistakes at their lines")
    func weightsAndBackups() throws {
        let configuration = try Fixture.load(
            """
            hosts:
              - match: "api.internal"
                connect-to: ["10.0.0.1:8443 weight=9", "10.0.0.2:8443", "10.0.9.1:8443 backup", "10.0.9.2:8443 backup weight=2"]
            """
        )
        let decisions = PolicyDecisions(configuration: configuration)
        let targets = decisions.decide(host: "api.internal", port: 443).connectTo
        #expect(targets.map(\.weight) == [9, 1, 1, 2])
        #expect(targets.map(\.isBackup) == [false, false, true, true])
        let explained = decisions.explain(try #require(HTTPURL(string: "https://api.internal/v1")))
        #expect(
            explained.contains(
                "connect-to: 10.0.0.1:8443 weight=9, 10.0.0.2:8443, 10.0.9.1:8443 backup, 10.0.9.2:8443 weight=2 backup (in turn, as many turns as its weight; a backup only when no other can be connected to;"
            ),
            "\(explained)"
        )
        let problems = Fixture.problems(
            """
            hosts:
              - match: a.example
                connect-to: ["10.0.0.1:80 weight=0", "10.0.0.1:80 weight=300", "10.0.0.1:80 heavy", "10.0.0.1:80 backup backup"]
              - match: b.example
                connect-to: ["10.0.0.2:80 backup"]
            """
        )
        #expect(problems.contains { $0.hasPrefix("t.yaml:3: hosts[0].connect-to[0]:") && $0.contains("from 1 to 256") }, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("t.yaml:3: hosts[0].connect-to[1]:") && $0.contains("from 1 to 256") }, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("t.yaml:3: hosts[0].connect-to[2]:") && $0.contains("\"heavy\" is not weight=N or backup") }, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("t.yaml:3: hosts[0].connect-to[3]:") && $0.contains("backup is given twice") }, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("t.yaml:5: hosts[1].connect-to:") && $0.contains("every target is a backup") }, "\(problems)")
    }

    @Test("connect-to on a rule whose session goes through an upstream proxy is refused: the parent connects")
    func refusedThroughAParent() {
        let problems = Fixture.problems(
            """
            sessions:
              parent:
                upstream-proxy: "http://127.0.0.1:3129"
            hosts:
              - match: a.example
                session: parent
                connect-to: "10.0.0.1:80"
            """
        )
        #expect(problems.contains { $0.hasPrefix("t.yaml:7: hosts[0].connect-to:") && $0.contains("upstream-proxy 127.0.0.1:3129") }, "\(problems)")
    }
}

@Suite("sessions.*.upstream-proxy: a list of parents tried in order")
struct UpstreamProxyListTests {
    @Test("A list makes the first the parent and the rest its fallbacks; explain names them in order")
    func readsTheList() throws {
        let configuration = try Fixture.load(
            """
            sessions:
              ci:
                upstream-proxy: ["http://parent-a.internal:3128", "http://parent-b.internal:3128"]
              one:
                upstream-proxy: "http://parent-a.internal:3128"
            hosts:
              - match: "*.example"
                session: ci
            """
        )
        let ci = try #require(configuration.session(named: "ci"))
        #expect(ci.upstreamProxy == UpstreamProxy(host: "parent-a.internal", port: 3128))
        #expect(ci.upstreamProxyFallbacks == [UpstreamProxy(host: "parent-b.internal", port: 3128)])
        let session = ci.makeSessionConfiguration(name: "ci")
        #expect(session.upstreamProxyFallbacks == [UpstreamProxy(host: "parent-b.internal", port: 3128)])
        #expect(configuration.session(named: "one")?.upstreamProxyFallbacks == [])
        let explained = PolicyDecisions(configuration: configuration).explain(try #require(HTTPURL(string: "https://a.example/")))
        #expect(explained.contains("upstream-proxy: parent-a.internal:3128, then parent-b.internal:3128 (the first"), "\(explained)")
    }

    @Test("Each bad entry of the list is a problem at its line and index")
    func rejectsBadEntries() {
        let problems = Fixture.problems(
            "sessions:\n  ci:\n    upstream-proxy: [\"http://a:3128\", \"https://b:3128\", \"c:3128\"]\n"
        )
        #expect(problems.contains { $0.hasPrefix("t.yaml:3: sessions.ci.upstream-proxy[1]:") && $0.contains("only http://") }, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("t.yaml:3: sessions.ci.upstream-proxy[2]:") }, "\(problems)")
    }
}
