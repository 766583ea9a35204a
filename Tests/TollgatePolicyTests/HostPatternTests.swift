import Testing
import TollgateHTTP
import TollgatePolicy

@Suite(.timeLimit(.minutes(1)))
struct HostPatternTests {
    /// (pattern, host, port, matches)
    static let table: [(String, String, Int, Bool)] = [
        ("example.com", "example.com", 443, true),
        ("example.com", "EXAMPLE.com", 443, true),
        ("example.com", "example.com.", 443, true),
        ("Example.COM.", "example.com", 80, true),
        ("example.com", "www.example.com", 443, false),
        ("example.com", "example.co", 443, false),
        ("example.com", "badexample.com", 443, false),
        ("*.example.com", "a.example.com", 443, true),
        ("*.example.com", "example.com", 443, false),
        ("*.example.com", "a.b.example.com", 443, false),
        ("*.example.com", "aexample.com", 443, false),
        ("*.example.com", ".example.com", 443, false),
        ("**.example.com", "example.com", 443, true),
        ("**.example.com", "a.example.com", 443, true),
        ("**.example.com", "a.b.c.example.com", 443, true),
        ("**.example.com", "notexample.com", 443, false),
        ("**", "anything.at.all", 1, true),
        ("**", "10.1.2.3", 1, true),
        ("**", "::1", 1, true),
        ("*", "localhost", 80, true),
        ("*", "a.b", 80, false),
        ("*", "10.1.2.3", 80, false),
        ("*.1.2.3", "10.1.2.3", 80, false),
        ("example.com:8443", "example.com", 8443, true),
        ("example.com:8443", "example.com", 443, false),
        ("*.example.com:8443", "a.example.com", 8443, true),
        ("10.1.2.3", "10.1.2.3", 80, true),
        ("10.1.2.3", "10.1.2.4", 80, false),
        ("[::1]", "::1", 80, true),
        ("::1", "[0:0::1]", 80, true),
        ("[::1]:8080", "::1", 8080, true),
        ("[::1]:8080", "::1", 80, false),
    ]

    @Test(arguments: 0..<HostPatternTests.table.count)
    func matchingFollowsTheTable(row: Int) throws {
        let (patternText, host, port, expected) = HostPatternTests.table[row]
        let pattern = try HostPattern(patternText)
        #expect(pattern.matches(host: host, port: port) == expected, "\(patternText) vs \(host):\(port)")
    }

    @Test func theCanonicalFormIsLowercaseWithoutTrailingDot() throws {
        #expect(try HostPattern("*.Example.COM.:8443").description == "*.example.com:8443")
        #expect(try HostPattern("[0:0::1]:80").description == "[::1]:80")
        #expect(try HostPattern("0:0::1").description == "::1")
        #expect(try HostPattern("**").port == nil)
    }

    @Test(arguments: [
        ("", "empty host pattern"),
        (
            "foo*.example.com",
            "\"foo*.example.com\": a wildcard must be the whole leftmost label: *.example.com or **.example.com"
        ),
        (
            "a.*.example.com",
            "\"a.*.example.com\": a wildcard must be the whole leftmost label: *.example.com or **.example.com"
        ),
        (
            "https://example.com/",
            "\"https://example.com/\": a host pattern is a host name with an optional :port, not a URL"
        ),
        ("example.com:0", "\"example.com:0\": the port must be a number from 1 to 65535"),
        ("example.com:", "\"example.com:\": the port must be a number from 1 to 65535"),
        ("a..b", "\"a..b\": empty label (two dots in a row, or a leading dot)"),
        ("bücher.example", "\"bücher.example\": write internationalized names in their xn-- (punycode) form"),
        ("[::1", "\"[::1\": unterminated ["),
        ("[example.com]", "\"[example.com]\": not an IPv6 address in [ ]"),
        ("a+b.example", "\"a+b.example\": a host name has only letters, digits, - and _ between its dots"),
    ])
    func badPatternsAreRefusedWithAReason(text: String, message: String) {
        do {
            _ = try HostPattern(text)
            Issue.record("\(text) was accepted")
        } catch {
            #expect(error.description == message)
        }
    }
}

@Suite(.timeLimit(.minutes(1)))
struct HostRuleMatcherTests {
    static func rule(_ patterns: String..., session: String = "default") throws -> HostRule {
        var rule = HostRule(patterns: try patterns.map { try HostPattern($0) })
        rule.session = session
        return rule
    }

    @Test func theFirstMatchingRuleWinsInFileOrder() throws {
        let matcher = HostRuleMatcher(rules: [
            try Self.rule("api.example.com", session: "api"),
            try Self.rule("*.example.com", session: "one-label"),
            try Self.rule("**.example.com", "example.org", session: "any-depth"),
            try Self.rule("**", session: "rest"),
        ])
        let table: [(String, Int?, String)] = [
            ("api.example.com", 0, "/"),
            ("www.example.com", 1, "*.example.com"),
            ("a.b.example.com", 2, "**.example.com"),
            ("example.com", 2, "**.example.com"),
            ("example.org", 2, "example.org"),
            ("other.net", 3, "**"),
        ]
        for (host, index, pattern) in table {
            let match = matcher.firstMatch(host: host, port: 443)
            #expect(match?.index == index, "\(host)")
            if pattern != "/" { #expect(match?.pattern.description == pattern, "\(host)") }
        }
    }

    @Test func aGeneralRuleBeforeASpecificOneShadowsIt() throws {
        let matcher = HostRuleMatcher(rules: [try Self.rule("**.example.com"), try Self.rule("api.example.com")])
        #expect(matcher.firstMatch(host: "api.example.com", port: 443)?.index == 0)
    }

    @Test func noRuleMatchesGivesNil() throws {
        let matcher = HostRuleMatcher(rules: [try Self.rule("example.com:8443")])
        #expect(matcher.firstMatch(host: "example.com", port: 443) == nil)
        #expect(matcher.firstMatch(for: try #require(HTTPURL(string: "https://example.com:8443/x")))?.index == 0)
        #expect(matcher.firstMatch(for: try #require(HTTPURL(string: "https://example.com/x"))) == nil)
    }

    @Test func aRulesPinsAreItsOwnAndNeverMergedFromLaterRules() throws {
        let yaml = """
            hosts:
              - match: "api.example.com"
                trust:
                  pins: ["sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="]
              - match: "**.example.com"
                trust:
                  pins: ["sha256/BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBA="]
            """
        let decisions = PolicyDecisions(configuration: try Fixture.load(yaml))
        let api = decisions.decide(host: "api.example.com", port: 443)
        #expect(api.trust.pins.map { "\($0)" } == ["sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="])
        let www = decisions.decide(host: "www.example.com", port: 443)
        #expect(www.trust.pins.map { "\($0)" } == ["sha256/BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBA="])
        #expect(decisions.decide(host: "example.net", port: 443).trust.pins.isEmpty)
    }
}
