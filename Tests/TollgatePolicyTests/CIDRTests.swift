import Testing
import TollgatePolicy

@Suite(.timeLimit(.minutes(1)))
struct CIDRTests {
    @Test func ipv4NetworksContainTheirAddresses() throws {
        let network = try CIDR.parse("10.0.0.0/8")
        #expect(network.contains("10.0.0.1"))
        #expect(network.contains("10.255.255.255"))
        #expect(!network.contains("11.0.0.0"))
        #expect(!network.contains("::1"))
        #expect(!network.contains("not an address"))
        #expect(network.description == "10.0.0.0/8")
        #expect(network.prefixLength == 8)
        #expect(!network.isIPv6)
    }

    @Test func oddPrefixLengthsMaskTheRightBits() throws {
        let network = try CIDR.parse("172.16.0.0/12")
        #expect(network.contains("172.31.255.255"))
        #expect(!network.contains("172.32.0.0"))
        #expect(!network.contains("172.15.255.255"))
        let slash0 = try CIDR.parse("0.0.0.0/0")
        #expect(slash0.contains("255.255.255.255"))
    }

    @Test func aSingleAddressIsAFullLengthNetwork() throws {
        #expect(try CIDR.parse("192.0.2.7").description == "192.0.2.7/32")
        #expect(try CIDR.parse("2001:db8::1").description == "2001:db8::1/128")
        #expect(try CIDR.parse("192.0.2.7").contains("192.0.2.7"))
        #expect(!(try CIDR.parse("192.0.2.7")).contains("192.0.2.8"))
    }

    @Test func ipv6NetworksContainTheirAddresses() throws {
        let network = try CIDR.parse("fd00::/8")
        #expect(network.isIPv6)
        #expect(network.contains("fd12:3456::1"))
        #expect(network.contains("[fdff::]"))
        #expect(!network.contains("fe80::1"))
        #expect(!network.contains("10.0.0.1"))
        #expect(CIDR.loopbackIPv6.contains("::1"))
        #expect(CIDR.loopbackIPv6.description == "::1/128")
        #expect(!CIDR.loopbackIPv6.contains("::2"))
    }

    @Test func ipv4MappedAddressesCountAsTheirIPv4Address() throws {
        #expect(CIDR.loopbackIPv4.contains("::ffff:127.0.0.1"))
        #expect(try CIDR.parse("10.0.0.0/8").contains("::ffff:10.9.8.7"))
        #expect(!(try CIDR.parse("10.0.0.0/8")).contains("::ffff:11.0.0.1"))
        #expect(try CIDR.parse("::ffff:0:0/96").contains("192.0.2.1"))
        #expect(try CIDR.parse("::/0").contains("192.0.2.1"))
        #expect(!(try CIDR.parse("fd00::/8")).contains("192.0.2.1"))
        #expect(!CIDR.loopbackIPv4.contains("::127.0.0.1"))
    }

    @Test func bytesAreAcceptedDirectly() throws {
        #expect(CIDR.loopbackIPv4.contains([127, 1, 2, 3]))
        #expect(!CIDR.loopbackIPv4.contains([1, 2, 3]))
        #expect(CIDR(address: [192, 168, 1, 77], prefixLength: 24)?.description == "192.168.1.0/24")
        #expect(CIDR(address: [1, 2, 3, 4], prefixLength: 33) == nil)
        #expect(CIDR.addressBytes("[::1]") == [UInt8](repeating: 0, count: 15) + [1])
        #expect(CIDR.addressText([192, 0, 2, 1]) == "192.0.2.1")
    }

    @Test(arguments: [
        ("192.168.1.1/24", "\"192.168.1.1/24\" has host bits set; did you mean 192.168.1.0/24?"),
        ("10.0.0.0/33", "\"10.0.0.0/33\": an IPv4 prefix length is 0 to 32, not 33"),
        ("fd00::/129", "\"fd00::/129\": an IPv6 prefix length is 0 to 128, not 129"),
        ("10.0.0.0/", "\"10.0.0.0/\": the prefix length after / must be a number"),
        ("10.0.0.0/x", "\"10.0.0.0/x\": the prefix length after / must be a number"),
        ("10.0.0.0/-1", "\"10.0.0.0/-1\": the prefix length after / must be a number"),
        ("256.0.0.0/8", "\"256.0.0.0/8\" is not an IP address or network (ADDRESS/PREFIX)"),
        ("10.0.0", "\"10.0.0\" is not an IP address or network (ADDRESS/PREFIX)"),
        ("010.0.0.1", "\"010.0.0.1\" is not an IP address or network (ADDRESS/PREFIX)"),
        ("example.com/8", "\"example.com/8\" is not an IP address or network (ADDRESS/PREFIX)"),
        ("[::1]/128", "\"[::1]/128\" is not an IP address or network (ADDRESS/PREFIX)"),
        ("fe80::1%eth0", "\"fe80::1%eth0\" is not an IP address or network (ADDRESS/PREFIX)"),
        ("", "\"\" is not an IP address or network (ADDRESS/PREFIX)"),
    ])
    func badInputIsRefusedWithAReason(text: String, message: String) {
        do {
            _ = try CIDR.parse(text)
            Issue.record("\(text) was accepted")
        } catch {
            #expect(error.description == message)
        }
        #expect(CIDR(text) == nil)
    }

    @Test func destinationTargetsParseNetworksPortsAndHosts() throws {
        typealias Target = PolicyConfiguration.DestinationRule.Target
        #expect(try Target.parse("all") == .all)
        #expect(try Target.parse("10.0.0.0/8") == .network(try CIDR.parse("10.0.0.0/8"), port: nil))
        #expect(try Target.parse("10.0.0.0/8:22") == .network(try CIDR.parse("10.0.0.0/8"), port: 22))
        #expect(try Target.parse("10.1.2.3:22").description == "10.1.2.3/32:22")
        #expect(try Target.parse("[fd00::/8]:443").description == "[fd00::/8]:443")
        #expect(try Target.parse("fd00::/8").description == "fd00::/8")
        #expect(try Target.parse("*.example.com:443") == .host(try HostPattern("*.example.com:443")))
        #expect(try Target.parse("cafe.be") == .host(try HostPattern("cafe.be")))
        #expect(try Target.parse("1e100.net") == .host(try HostPattern("1e100.net")))
    }

    @Test func destinationRulesAreFirstMatchAndAListDeniesWhatItDoesNotMatch() throws {
        var access = PolicyConfiguration.Access()
        #expect(access.allowsDestination(host: "anything.example", address: [192, 0, 2, 1], port: 80))
        access.destinations = [
            .init(.deny, .network(try CIDR.parse("169.254.0.0/16"), port: nil)),
            .init(.deny, .network(try CIDR.parse("10.0.0.0/8"), port: 22)),
            .init(.allow, .host(try HostPattern("**.example.com"))),
            .init(.allow, .network(try CIDR.parse("10.0.0.0/8"), port: nil)),
        ]
        #expect(!access.allowsDestination(host: "metadata", address: [169, 254, 169, 254], port: 80))
        #expect(!access.allowsDestination(host: "169.254.169.254", address: nil, port: 80))
        #expect(!access.allowsDestination(host: "git.internal", address: [10, 1, 1, 1], port: 22))
        #expect(access.allowsDestination(host: "git.internal", address: [10, 1, 1, 1], port: 443))
        #expect(access.allowsDestination(host: "www.example.com", address: [192, 0, 2, 1], port: 443))
        #expect(!access.allowsDestination(host: "other.net", address: [192, 0, 2, 1], port: 443))
        #expect(access.allowsClient(address: [127, 0, 0, 1]))
        #expect(!access.allowsClient(address: [10, 0, 0, 1]))
    }
}
