import NIOCore
import Testing
import TollgatePolicy

@testable import TollgateProxy

@Suite("Destination hosts: one canonical spelling", .timeLimit(.minutes(1)))
struct CanonicalHostTests {
    static let spellingsOf127001 = [
        "127.0.0.1", "2130706433", "0x7f000001", "0X7F000001", "0177.0.0.1", "0177.0000.0.01", "127.1", "127.0.1",
        "0x7f.1", "0x7f.0.0.1", "127.0.0.1.", "%31%32%37.0.0.1", "[::ffff:127.0.0.1]", "::ffff:7f00:1",
        "::FFFF:127.0.0.1",
    ]

    @Test("Every spelling of 127.0.0.1 is 127.0.0.1", arguments: spellingsOf127001)
    func loopbackSpellings(_ spelling: String) throws {
        let host = try CanonicalHost.parse(spelling)
        #expect(host.text == "127.0.0.1")
        #expect(host.address == [127, 0, 0, 1])
    }

    @Test("The dotted-quad shortcut takes exactly the canonical quads, as inet_ntop writes them")
    func dottedQuadShortcut() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let bytes = (0..<4).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let text = CIDR.addressText(bytes)!
            #expect(CanonicalHost.canonicalDottedQuad(text) == bytes)
        }
        for other in [
            "", "1", "1.2.3", "1.2.3.4.5", "01.2.3.4", "1.2.3.04", "256.1.1.1", "1.2.3.1000", "1..2.3", ".1.2.3",
            "1.2.3.", "0x1.2.3.4", "1.2.3.4 ", "١.2.3.4", "1.2.3.-4",
        ] {
            #expect(CanonicalHost.canonicalDottedQuad(other) == nil, "\(other)")
        }
        #expect(CanonicalHost.canonicalDottedQuad("0.0.0.0") == [0, 0, 0, 0])
        #expect(CanonicalHost.canonicalDottedQuad("10.0.100.255") == [10, 0, 100, 255])
    }

    @Test("A socket address's network bytes are those of its text form")
    func socketAddressBytes() throws {
        for text in ["127.0.0.1", "10.1.2.3", "255.255.255.255", "::1", "fe80::1:2", "::ffff:127.0.0.1", "2001:db8::8:800:200c:417a"] {
            let address = try SocketAddress(ipAddress: text, port: 80)
            #expect(address.networkBytes == CIDR.addressBytes(text), "\(text)")
        }
        #expect(try SocketAddress(unixDomainSocketPath: "/tmp/x").networkBytes == nil)
    }

    @Test("Names are lowercased without a trailing dot; IPv6 is compressed")
    func namesAndIPv6() throws {
        #expect(try CanonicalHost.parse("WWW.Example.COM.").text == "www.example.com")
        #expect(try CanonicalHost.parse("www.example.com").address == nil)
        #expect(try CanonicalHost.parse("[0:0:0:0:0:0:0:1]").text == "::1")
        #expect(try CanonicalHost.parse("FE80:0::1").forURL == "[fe80::1]")
        #expect(try CanonicalHost.parse("169.254.169.254").text == "169.254.169.254")
        #expect(try CanonicalHost.parse("2852039166").text == "169.254.169.254")
        #expect(try CanonicalHost.parse("10.1").text == "10.0.0.1")
        #expect(try CanonicalHost.parse("1.2.3.cafe-4").text == "1.2.3.cafe-4")
    }

    static let refused = [
        "1.2.3.4.5", "256.1.1.1", "08.1.1.1", "1.0x1g.1", "4294967296", "1.2.3.0x100", "a..b", "a.b..", "",
        "%zz", "%00", "exa mple.com", "under\\score", "[::1%25eth0]", "::gg", "a@b", "1.2.3.4:80", "%2e",
    ]

    @Test("What could be read two ways is refused", arguments: refused)
    func refusedSpellings(_ spelling: String) {
        #expect(throws: CanonicalHost.Invalid.self, "\(spelling)") { try CanonicalHost.parse(spelling) }
    }
}

@Suite("Destination rules", .timeLimit(.minutes(1)))
struct DestinationCheckTests {
    private func check(_ rules: [String] = [], listeners: [ListenAddress] = []) throws -> DestinationCheck {
        var access = PolicyConfiguration.Access()
        access.destinations = try rules.map { text in
            let (action, target) =
                text.hasPrefix("deny ")
                ? (PolicyConfiguration.DestinationRule.Action.deny, text.dropFirst(5))
                : (.allow, text.dropFirst(6))
            return PolicyConfiguration.DestinationRule(action, try .parse(String(target)))
        }
        let own = OwnListeners()
        for listener in listeners { own.register(listener) }
        return DestinationCheck(access: access, ownListeners: own, resolver: AddressResolver())
    }

    private func allowed(_ check: DestinationCheck, _ host: String, _ port: Int = 80) throws -> Bool {
        let canonical = try CanonicalHost.parse(host)
        if case .allowed = check.decide(host: canonical, address: canonical.address, port: port) { return true }
        return false
    }

    @Test("With no rules everything is allowed except link-local addresses")
    func defaults() throws {
        let check = try check()
        #expect(try allowed(check, "10.0.0.1"))
        #expect(try allowed(check, "127.0.0.1"))
        #expect(try !allowed(check, "169.254.169.254"))
        #expect(try !allowed(check, "169.254.0.1"))
        #expect(try !allowed(check, "fe80::1"))
        #expect(try !allowed(check, "::ffff:169.254.169.254"))
    }

    @Test("The first matching rule decides; with rules, what matches none is denied")
    func firstMatch() throws {
        let check = try check(["deny 10.0.0.0/8", "allow *.example.com", "allow 192.168.1.0/24:443"])
        #expect(try !allowed(check, "10.1.2.3"))
        #expect(try allowed(check, "api.example.com"))
        #expect(try allowed(check, "192.168.1.7", 443))
        #expect(try !allowed(check, "192.168.1.7", 80))
        #expect(try !allowed(check, "8.8.8.8"))
    }

    @Test("allow all does not open link-local; an explicit network rule does")
    func linkLocalNeedsExplicitRule() throws {
        #expect(try !allowed(check(["allow all"]), "169.254.169.254"))
        #expect(try allowed(check(["allow 169.254.0.0/16"]), "169.254.169.254"))
    }

    @Test("The proxy's own listeners are denied even when a rule allows them; wildcard listeners cover local addresses")
    func ownListeners() throws {
        let check = try check(
            ["allow all"],
            listeners: [ListenAddress(host: "127.0.0.1", port: 3128), ListenAddress(host: "0.0.0.0", port: 9090)]
        )
        #expect(try !allowed(check, "127.0.0.1", 3128))
        #expect(try !allowed(check, "127.0.0.2", 3128))
        #expect(try !allowed(check, "0.0.0.0", 3128))
        #expect(try allowed(check, "127.0.0.1", 3129))
        #expect(try !allowed(check, "127.0.0.1", 9090))
        #expect(try !allowed(check, "::1", 9090))
        #expect(try allowed(check, "8.8.8.8", 3128))
    }
}
