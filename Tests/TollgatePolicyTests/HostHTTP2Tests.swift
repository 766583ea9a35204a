import Testing
import TollgateSession
import TollgateTLS
@testable import TollgatePolicy

@Suite("hosts[].http2: whether a host's https origins are offered HTTP/2")
struct HostHTTP2Tests {
    static let yaml = """
        hosts:
          - match: "legacy.example"
            http2: off
          - match: "modern.example"
            http2: auto
        """

    @Test("auto is the default; off is read per rule and reaches the decision")
    func readsTheSetting() throws {
        let decisions = PolicyDecisions(configuration: try Fixture.load(Self.yaml))
        #expect(decisions.decide(host: "legacy.example", port: 443).http2 == .off)
        #expect(decisions.decide(host: "modern.example", port: 443).http2 == .auto)
        #expect(decisions.decide(host: "other.example", port: 443).http2 == .auto)
    }

    @Test("A host with http2: off gets an ALPN offer of http/1.1 only; other hosts keep the session's h2 offer")
    func takesH2OutOfTheOffer() throws {
        let delegate = PolicySessionDelegate(sessionName: "default", decisions: PolicyDecisions(configuration: try Fixture.load(Self.yaml)))
        var defaults = TLSConfiguration.makeClientConfiguration()
        defaults.applicationProtocols = ["h2", "http/1.1"]
        #expect(delegate.tlsConfiguration(host: "legacy.example", port: 443, defaults: defaults).applicationProtocols == ["http/1.1"])
        #expect(delegate.tlsConfiguration(host: "modern.example", port: 443, defaults: defaults).applicationProtocols == ["h2", "http/1.1"])
    }

    @Test("Any other value is a problem at its line, naming the key and the choices")
    func rejectsOtherValues() {
        let problems = Fixture.problems("hosts:\n  - match: a.example\n    http2: maybe\n")
        #expect(problems.contains { $0.hasPrefix("t.yaml:3: hosts[0].http2:") && $0.contains("auto") && $0.contains("off") }, "\(problems)")
    }
}
