import NIOCore
import NIOConcurrencyHelpers
import Testing
import TollgatePolicy
import TollgateProxy

@Suite("SessionAddressCheck: the destination rules at connection time")
struct SessionAddressCheckRulesTests {
    @Test("Denied networks, link-local addresses and the proxy's own listeners are refused; the rules in force are read each time")
    func rules() throws {
        let own = OwnListeners()
        own.register(ListenAddress(host: "127.0.0.1", port: 3128))
        var access = PolicyConfiguration.Access()
        access.destinations = [.init(.deny, .network(CIDR("10.0.0.0/8")!, port: nil)), .init(.allow, .all)]
        let rules = NIOLockedValueBox(access)
        let check = SessionAddressCheck(ownListeners: own, access: { rules.withLockedValue { $0 } })

        let inside = try SocketAddress(ipAddress: "10.1.2.3", port: 80)
        let refusal = try #require(check.refusal(host: "rebound.example", port: 80, address: inside))
        #expect(refusal.contains("access.destinations[0]") && refusal.contains("resolved to 10.1.2.3"), "\(refusal)")
        #expect(check.refusal(host: "metadata.example", port: 80, address: try SocketAddress(ipAddress: "169.254.169.254", port: 80)) != nil)
        #expect(check.refusal(host: "loop.example", port: 3128, address: try SocketAddress(ipAddress: "127.0.0.1", port: 3128)) != nil)
        #expect(check.refusal(host: "public.example", port: 443, address: try SocketAddress(ipAddress: "93.184.216.34", port: 443)) == nil)

        // A reload that drops the rule applies to the next connection.
        rules.withLockedValue { $0.destinations = [] }
        #expect(check.refusal(host: "rebound.example", port: 80, address: inside) == nil)
    }
}
