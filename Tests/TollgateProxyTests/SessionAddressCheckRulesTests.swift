import NIOCore
import NIOConcurrencyHelpers
import Testing
import TollgatePolicy
import TollgateProxy
import TollgateTesting

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

    /// Where the stack is (the address of a local) when the rules closure runs.
    private static func stackPosition() -> UInt {
        var marker = 0
        return withUnsafeMutablePointer(to: &marker) { UInt(bitPattern: $0) }
    }

    @Test(
        "Checking does not wrap the rules closure again each time (the call reaches it at the same stack depth)",
        // ASan moves a local whose address is taken to a heap-allocated fake frame
        // (detect_stack_use_after_return): its address no longer tells the depth.
        .disabled(if: BuildSanitizer.address, "ASan's fake stack frames do not show stack depth")
    )
    func rulesClosureStaysFlat() throws {
        let depth = NIOLockedValueBox<[UInt]>([])
        let check = SessionAddressCheck(ownListeners: OwnListeners()) {
            depth.withLockedValue { $0.append(Self.stackPosition()) }
            return PolicyConfiguration.Access()
        }
        let address = try SocketAddress(ipAddress: "192.0.2.1", port: 80)
        for _ in 0..<2000 {
            _ = check.refusal(host: "example.com", port: 80, address: address)
        }
        let positions = depth.withLockedValue { $0 }
        try #require(positions.count == 2000)
        // Each wrapping added two frames between the caller and the closure: 4000 of them by now.
        #expect(positions.first == positions.last, "the closure ran \(Int(positions.first!) - Int(positions.last!)) bytes deeper")
    }
}
