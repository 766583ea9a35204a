import Testing
@testable import TollgatePolicy

@Suite("listen[].proxy-protocol: read from the file")
struct ProxyProtocolLoadingTests {
    @Test("proxy-protocol: true is read; without access.trusted-forwarders it is a problem at its line")
    func needsTrustedForwarders() throws {
        let configuration = try Fixture.load(
            "listen:\n  - address: \"127.0.0.1:3128\"\n    proxy-protocol: true\naccess:\n  trusted-forwarders: [\"10.0.0.0/24\"]\n"
        )
        #expect(configuration.listeners.first?.proxyProtocol == true)
        let problems = Fixture.problems("listen:\n  - address: \"127.0.0.1:3128\"\n    proxy-protocol: true\n")
        #expect(problems.contains { $0.hasPrefix("t.yaml:3: listen[0].proxy-protocol:") && $0.contains("access.trusted-forwarders") }, "\(problems)")
    }
}
