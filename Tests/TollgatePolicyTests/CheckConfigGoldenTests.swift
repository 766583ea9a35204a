import Foundation
import Testing
import TollgatePolicy

/// Golden `FILE:LINE: KEY: message` output, one broken file per validation rule.
@Suite(.timeLimit(.minutes(1)))
struct CheckConfigGoldenTests {
    @Test func anUnknownKeyIsReportedWithTheClosestValidKey() {
        #expect(
            Fixture.problems("cache:\n  kidn: shared\n") == [
                #"t.yaml:2: cache.kidn: unknown key "kidn"; did you mean "kind"?"#
            ]
        )
    }

    @Test func anUnknownKeyWithNothingCloseListsTheValidKeys() {
        #expect(
            Fixture.problems("log:\n  destination: stdout\n") == [
                #"t.yaml:2: log.destination: unknown key "destination"; expected one of: access, format, level, har-entries"#
            ]
        )
    }

    @Test func aTranspositionCountsAsOneEdit() {
        let yaml = """
            hosts:
              - match: example.com
                trsut: { deny: true }
            """
        #expect(
            Fixture.problems(yaml) == [#"t.yaml:3: hosts[0].trsut: unknown key "trsut"; did you mean "trust"?"#]
        )
    }

    @Test func aTopLevelTypoIsReported() {
        #expect(
            Fixture.problems("listeners:\n  - address: 127.0.0.1:1\n") == [
                #"t.yaml:1: listeners: unknown key "listeners"; did you mean "listen"?"#
            ]
        )
    }

    @Test func valuesOfTheWrongTypeAreReported() {
        let yaml = """
            listen: "127.0.0.1:3128"
            access:
              connect-ports: [443, "https"]
            limits:
              max-headers: lots
            hosts:
              - match: example.com
                intercept: "yes please"
                trust: [system]
            """
        #expect(
            Fixture.problems(yaml) == [
                #"t.yaml:1: listen: expected a list of listeners, got "127.0.0.1:3128""#,
                #"t.yaml:3: access.connect-ports[1]: expected a whole number, got "https""#,
                #"t.yaml:5: limits.max-headers: expected a whole number, got "lots""#,
                #"t.yaml:8: hosts[0].intercept: expected true or false, got "yes please""#,
                #"t.yaml:9: hosts[0].trust: expected a mapping, got a list"#,
            ]
        )
    }

    @Test func anEnumerationValueIsCheckedWithASuggestion() {
        let yaml = """
            sessions:
              ci:
                redirects: follow-same-hosts
                cache-policy: Protocol
            """
        #expect(
            Fixture.problems(yaml) == [
                #"t.yaml:3: sessions.ci.redirects: unknown value "follow-same-hosts"; expected one of pass, follow, follow-same-host; did you mean "follow-same-host"?"#,
                #"t.yaml:4: sessions.ci.cache-policy: unknown value "Protocol"; expected one of protocol, reload, reload-revalidating, return-cache-else-load, return-cache-dont-load; did you mean "protocol"?"#,
            ]
        )
    }

    @Test func badDurationsAreReported() {
        let yaml = """
            limits:
              header-read-timeout: 10
              client-idle-timeout: 1.5s
              upstream-timeout: 0s
            sessions:
              default:
                timeout-request: 10 minutes
            """
        #expect(
            Fixture.problems(yaml) == [
                #"t.yaml:2: limits.header-read-timeout: bad duration "10"; a unit is needed (10s?)"#,
                #"t.yaml:3: limits.client-idle-timeout: bad duration "1.5s"; expected a whole number and a unit: 500ms, 30s, 10m, 2h or 7d"#,
                #"t.yaml:4: limits.upstream-timeout: must be longer than zero"#,
                #"t.yaml:7: sessions.default.timeout-request: bad duration "10 minutes"; expected a whole number and a unit: 500ms, 30s, 10m, 2h or 7d"#,
            ]
        )
    }

    @Test func badSizesAreReported() {
        let yaml = """
            cache:
              max-size: 1GB
            limits:
              max-header-bytes: lots
            """
        #expect(
            Fixture.problems(yaml) == [
                #"t.yaml:2: cache.max-size: bad size "1GB"; sizes use binary units; did you mean 1GiB?"#,
                #"t.yaml:4: limits.max-header-bytes: bad size "lots"; expected bytes or a number with KiB, MiB, GiB or TiB"#,
            ]
        )
    }

    @Test("The WebSocket limits: bounds and units are checked, and good values are read")
    func webSocketLimits() throws {
        let yaml = """
            limits:
              websocket-max-message: 2GiB
              websocket-idle-timeout: 0s
            """
        #expect(
            Fixture.problems(yaml) == [
                #"t.yaml:2: limits.websocket-max-message: between 1 byte and 1GiB"#,
                #"t.yaml:3: limits.websocket-idle-timeout: must be longer than zero"#,
            ]
        )
        let defaults = try Fixture.load("limits: {}").limits
        #expect(defaults.websocketMaxMessage == 16 << 20)
        #expect(defaults.websocketIdleTimeout == .seconds(600))
        let limits = try Fixture.load("limits: { websocket-max-message: 64KiB, websocket-idle-timeout: 30s }").limits
        #expect(limits.websocketMaxMessage == 64 << 10)
        #expect(limits.websocketIdleTimeout == .seconds(30))
    }

    @Test("limits.tunnel-idle-timeout: 15 minutes by default, read, and zero refused with file, line and key")
    func tunnelIdleTimeout() throws {
        #expect(
            Fixture.problems("limits:\n  tunnel-idle-timeout: 0s") == [
                #"t.yaml:2: limits.tunnel-idle-timeout: must be longer than zero"#
            ]
        )
        #expect(try Fixture.load("limits: {}").limits.tunnelIdleTimeout == .seconds(900))
        #expect(try Fixture.load("limits: { tunnel-idle-timeout: 2h }").limits.tunnelIdleTimeout == .seconds(7200))
    }

    @Test func anUnknownSessionNameIsReported() {
        let yaml = """
            sessions:
              ci: { redirects: follow }
            hosts:
              - match: a.example
                session: cj
              - match: b.example
                session: nightly
              - match: c.example
                session: default
            """
        #expect(
            Fixture.problems(yaml) == [
                #"t.yaml:5: hosts[0].session: unknown session "cj"; did you mean "ci"?"#,
                #"t.yaml:7: hosts[1].session: unknown session "nightly"; sessions are: default, ci"#,
            ]
        )
    }

    @Test func pinsAreCheckedWithTheSPKIPinMessages() {
        let yaml = """
            hosts:
              - match: pinned.example
                trust:
                  pins:
                    - "sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
                    - "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
                    - "sha256/AAAA"
                    - "sha1/AAAAAAAAAAAAAAAAAAAAAAAAAAA="
                    - "sha256/not base64!"
            """
        #expect(
            Fixture.problems(yaml) == [
                #"t.yaml:6: hosts[0].trust.pins[1]: "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=" is missing the "sha256/" prefix (expected sha256/<base64>)"#,
                #"t.yaml:7: hosts[0].trust.pins[2]: "sha256/AAAA" decodes to 3 bytes; a SHA-256 pin is 32 bytes (44 base64 characters)"#,
                #"t.yaml:8: hosts[0].trust.pins[3]: "sha1/AAAAAAAAAAAAAAAAAAAAAAAAAAA=" is a sha1/ pin; SHA-1 pins are not supported, use the sha256/ pin of the same key"#,
                #"t.yaml:9: hosts[0].trust.pins[4]: "sha256/not base64!" is not valid standard base64 after "sha256/" (its length, 11, is not a multiple of 4: is the '=' padding missing?)"#,
            ]
        )
    }

    @Test func unreadableReferencedFilesAreReported() throws {
        let directory = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory + "/certs", withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: directory + "/present.pass", contents: Data("x\n".utf8))
        let yaml = """
            access:
              users:
                - { name: ci, password-file: present.pass }
                - { name: bot, password-file: missing.pass }
            hosts:
              - match: example.com
                client-identity: { certificate: certs, key: "~/id.key" }
            """
        #expect(
            Fixture.problems(yaml, checkFiles: true, base: directory) == [
                "t.yaml:4: access.users[1].password-file: cannot read \"missing.pass\" (\(directory)/missing.pass): no such file",
                "t.yaml:7: hosts[0].client-identity.certificate: cannot read \"certs\" (\(directory)/certs): is a directory",
                "t.yaml:7: hosts[0].client-identity.key: cannot read \"~/id.key\" (/home/test/id.key): no such file",
            ]
        )
        #expect(Fixture.problems(yaml, checkFiles: false, base: directory).isEmpty)
    }

    @Test func anUnreadableConfigurationFileIsOneProblem() {
        let problems = PolicyLoader().problems(inFile: "/nonexistent/tollgate.yaml").map(\.description)
        #expect(problems == ["/nonexistent/tollgate.yaml:1: (file): cannot read the file: no such file"])
    }

    @Test func aReverseListenerNeedsAnUpstreamAndAForwardOneHasNone() {
        let yaml = """
            listen:
              - address: "127.0.0.1:8443"
                mode: reverse
              - address: "127.0.0.1:3128"
                upstream: "https://origin.example"
              - address: "127.0.0.1:8444"
                mode: reverse
                upstream: "ftp://origin.example"
            """
        #expect(
            Fixture.problems(yaml) == [
                #"t.yaml:2: listen[0]: a reverse listener needs "upstream", the origin every request goes to"#,
                #"t.yaml:5: listen[1].upstream: only a reverse listener has an upstream; remove it or set mode: reverse"#,
                #"t.yaml:8: listen[2].upstream: bad upstream "ftp://origin.example": the scheme must be http or https"#,
            ]
        )
    }

    @Test func twoListenersOnOneAddressAreReported() {
        let yaml = """
            listen:
              - address: "127.0.0.1:3128"
              - address: "127.0.0.1:3128"
              - address: "0.0.0.0:8080"
              - address: "10.1.2.3:8080"
              - address: "[::1]:3128"
              - address: "[0:0::1]:3128"
            admin:
              address: "127.0.0.1:3128"
            """
        #expect(
            Fixture.problems(yaml) == [
                #"t.yaml:3: listen[1].address: 127.0.0.1:3128 is already used by listen[0] (line 2)"#,
                #"t.yaml:5: listen[3].address: 10.1.2.3:8080 overlaps 0.0.0.0:8080 by listen[2] (line 4)"#,
                #"t.yaml:7: listen[5].address: [0:0::1]:3128 overlaps [::1]:3128 by listen[4] (line 6)"#,
                #"t.yaml:9: admin.address: 127.0.0.1:3128 is already used by listen[0] (line 2)"#,
            ]
        )
    }

    @Test func badAddressesAreReported() {
        let yaml = """
            listen:
              - address: "127.0.0.1"
              - address: "::1:3128"
              - address: "127.0.0.1:70000"
            """
        #expect(
            Fixture.problems(yaml) == [
                #"t.yaml:2: listen[0].address: bad address "127.0.0.1" has no port; expected HOST:PORT"#,
                #"t.yaml:3: listen[1].address: bad address "::1:3128": write an IPv6 address in brackets, [ADDRESS]:PORT"#,
                #"t.yaml:4: listen[2].address: bad address "127.0.0.1:70000": the port must be a number from 0 to 65535"#,
            ]
        )
    }

    @Test func aYAMLSyntaxErrorIsReportedWithItsLine() {
        #expect(
            Fixture.problems("cache:\n  kind: shared\nhosts: [a, b\nlog: {}\n") == [
                "t.yaml:4: (yaml): did not find expected ',' or ']' (while parsing a flow sequence at line 3)"
            ]
        )
        #expect(
            Fixture.problems("listen:\n\t- address: x\n") == [
                "t.yaml:2: (yaml): while scanning for the next token: found character that cannot start any token"
            ]
        )
    }

    @Test func aDuplicateKeyIsReported() {
        #expect(
            Fixture.problems("log:\n  level: info\n  level: debug\n") == [
                #"t.yaml:2: (yaml): duplicate key "level" in one mapping"#
            ]
        )
    }

    @Test func aDocumentThatIsNotAMappingIsReported() {
        #expect(
            Fixture.problems("- listen\n- cache\n") == [
                "t.yaml:1: (document): expected a mapping of sections (listen, cache, hosts, …)"
            ]
        )
    }

    @Test func accessRulesAreChecked() {
        let yaml = """
            access:
              clients: ["192.168.1.1/24", "10.0.0.0/33", "not-an-address"]
              destinations:
                - { deny: "169.254.0.0/16:99999" }
                - { allow: "foo*.example" }
                - { allow: all, deny: all }
                - { permit: all }
              users:
                - { name: "a:b", password-file: x }
            """
        #expect(
            Fixture.problems(yaml) == [
                #"t.yaml:2: access.clients[0]: "192.168.1.1/24" has host bits set; did you mean 192.168.1.0/24?"#,
                #"t.yaml:2: access.clients[1]: "10.0.0.0/33": an IPv4 prefix length is 0 to 32, not 33"#,
                #"t.yaml:2: access.clients[2]: "not-an-address" is not an IP address or network (ADDRESS/PREFIX)"#,
                #"t.yaml:4: access.destinations[0].deny: "169.254.0.0/16:99999": the port must be a number from 1 to 65535"#,
                #"t.yaml:5: access.destinations[1].allow: "foo*.example": a wildcard must be the whole leftmost label: *.example.com or **.example.com"#,
                #"t.yaml:6: access.destinations[2]: give either allow or deny, not both"#,
                #"t.yaml:7: access.destinations[3].permit: unknown key "permit"; expected one of: allow, deny"#,
                #"t.yaml:7: access.destinations[3]: expected { allow: TARGET } or { deny: TARGET }"#,
                #"t.yaml:9: access.users[0].name: a Basic authentication user name cannot contain ":""#,
            ]
        )
    }

    @Test func hostRuleDetailsAreChecked() {
        let yaml = """
            sessions:
              default:
                headers: { "Bad Name": x, Host: y, X-Ok: fine }
                upstream-proxy: "https://parent.example:3128"
            hosts:
              - session: default
              - match: []
              - match: example.com
                credentials:
                  - { user: alice, password-env: A, password-file: f }
                  - { user: bob, password-env: "1BAD" }
                  - { user: carol, password-env: OK, persistence: forever }
                cache:
                  store: deny
                  force-ttl: 10m
                  key: { drop-query: ["a=b", "*"] }
                trust:
                  pins-expire: someday
            """
        #expect(
            Fixture.problems(yaml) == [
                #"t.yaml:3: sessions.default.headers.Bad Name: "Bad Name" is not a valid header field name"#,
                #"t.yaml:3: sessions.default.headers.Host: Host is set by the proxy itself and cannot be added"#,
                #"t.yaml:4: sessions.default.upstream-proxy: bad upstream proxy "https://parent.example:3128": only http:// parent proxies are supported"#,
                #"t.yaml:6: hosts[0]: missing key "match""#,
                #"t.yaml:7: hosts[1].match: list at least one host pattern"#,
                #"t.yaml:10: hosts[2].credentials[0].password-file: give either password-env or password-file, not both"#,
                #"t.yaml:11: hosts[2].credentials[1].password-env: "1BAD" is not an environment variable name"#,
                #"t.yaml:12: hosts[2].credentials[2].persistence: unknown value "forever"; expected one of none, session, permanent"#,
                #"t.yaml:15: hosts[2].cache.force-ttl: force-ttl has no effect with store: deny"#,
                #"t.yaml:16: hosts[2].cache.key.drop-query[0]: "a=b" is not a query parameter name (no &, =, ? or spaces)"#,
                #"t.yaml:16: hosts[2].cache.key.drop-query[1]: "*": * may only end a prefix such as utm_*; use ignore-query to drop everything"#,
                #"t.yaml:18: hosts[2].trust.pins-expire: bad date "someday"; expected YYYY-MM-DD or an RFC 3339 time such as 2026-01-31T12:00:00Z"#,
            ]
        )
    }

    @Test func everyProblemOfAFileIsReportedInLineOrder() {
        let yaml = """
            listen:
              - address: "127.0.0.1:3128"
                mode: forwrd
              - address: "127.0.0.1:3128"
                mode: reverse
            cache:
              max-size: 1GB
              kidn: shared
            limits:
              upstream-timeout: 10
            sessions:
              ci:
                redirects: follow-same-hosts
            hosts:
              - match: ["*.example.com", "foo*.bar"]
                session: cj
                trust:
                  pins: ["sha256/abc"]
            """
        #expect(
            Fixture.problems(yaml) == [
                #"t.yaml:3: listen[0].mode: unknown value "forwrd"; expected forward or reverse; did you mean "forward"?"#,
                #"t.yaml:4: listen[1]: a reverse listener needs "upstream", the origin every request goes to"#,
                #"t.yaml:4: listen[1].address: 127.0.0.1:3128 is already used by listen[0] (line 2)"#,
                #"t.yaml:7: cache.max-size: bad size "1GB"; sizes use binary units; did you mean 1GiB?"#,
                #"t.yaml:8: cache.kidn: unknown key "kidn"; did you mean "kind"?"#,
                #"t.yaml:10: limits.upstream-timeout: bad duration "10"; a unit is needed (10s?)"#,
                #"t.yaml:13: sessions.ci.redirects: unknown value "follow-same-hosts"; expected one of pass, follow, follow-same-host; did you mean "follow-same-host"?"#,
                #"t.yaml:15: hosts[0].match[1]: "foo*.bar": a wildcard must be the whole leftmost label: *.example.com or **.example.com"#,
                #"t.yaml:16: hosts[0].session: unknown session "cj"; did you mean "ci"?"#,
                #"t.yaml:18: hosts[0].trust.pins[0]: "sha256/abc" is not valid standard base64 after "sha256/" (its length, 3, is not a multiple of 4: is the '=' padding missing?)"#,
            ]
        )
    }

    @Test func theFailureOfALoadCarriesEveryProblem() throws {
        let error = #expect(throws: PolicyLoader.Failure.self) {
            try Fixture.load("cache:\n  kind: public\nlog:\n  level: loud\n")
        }
        #expect(error?.problems.count == 2)
        #expect(error?.description.split(separator: "\n").count == 2)
    }
}
