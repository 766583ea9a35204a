import Testing
import TollgateHTTP
import TollgatePolicy

/// `trust.ocsp`: read, in the decision and `explain`; a value that is none of its choices is a
/// problem at its line.
@Suite("trust.ocsp: loading and explain")
struct TrustOCSPLoadingTests {
    @Test("off by default; check and require reach the decision and explain")
    func values() throws {
        let configuration = try Fixture.load(
            """
            hosts:
              - match: strict.example
                trust: { ocsp: require }
              - match: soft.example
                trust: { ocsp: check }
              - match: plain.example
            """
        )
        let decisions = PolicyDecisions(configuration: configuration)
        #expect(decisions.decide(host: "strict.example", port: 443).trust.ocsp == .require)
        #expect(decisions.decide(host: "soft.example", port: 443).trust.ocsp == .check)
        #expect(decisions.decide(host: "plain.example", port: 443).trust.ocsp == .off)
        let strict = decisions.explain(try #require(HTTPURL(string: "https://strict.example/")))
        #expect(strict.contains("stapled OCSP response required"), "\(strict)")
        #expect(!decisions.explain(try #require(HTTPURL(string: "https://plain.example/"))).contains("OCSP"))
        let problems = Fixture.problems("hosts:\n  - match: a.example\n    trust: { ocsp: always }\n")
        #expect(problems.contains { $0.hasPrefix("t.yaml:3: hosts[0].trust.ocsp:") }, "\(problems)")
    }
}
