import NIOCore
import Testing

@testable import TollgateProxy

@Suite("A client's address as text, formatted without inet_ntop for IPv4")
struct SocketAddressTextTests {
    @Test(
        "The same text as NIO's ipAddress",
        arguments: ["127.0.0.1", "0.0.0.0", "255.255.255.255", "10.20.30.40", "1.2.3.4", "192.168.100.9", "100.99.10.9", "::1", "2001:db8::7"]
    )
    func sameAsNIO(_ text: String) throws {
        let address = try SocketAddress(ipAddress: text, port: 443)
        #expect(address.addressText == address.ipAddress)
        #expect(address.addressText == text)
    }
}
