import NIOCore
import Testing
@testable import TollgateProxy

/// The PROXY protocol header read from the bytes received so far, v1 and v2.
@Suite("PROXY protocol headers (v1 text, v2 binary)")
struct ProxyProtocolHeaderTests {
    private func read(_ bytes: [UInt8]) -> ProxyProtocolHeader { ProxyProtocolHeader.read(ByteBuffer(bytes: bytes)) }
    private func read(_ text: String) -> ProxyProtocolHeader { read(Array(text.utf8)) }

    private func source(_ header: ProxyProtocolHeader) -> (String, Int)? {
        guard case .header(let source?, _) = header, let address = source.ipAddress, let port = source.port else { return nil }
        return (address, port)
    }

    @Test("v1: TCP4 and TCP6 lines give the client's address and port; UNKNOWN none; what follows the line is not part of it")
    func version1() {
        let line = "PROXY TCP4 192.0.2.7 198.51.100.1 51234 443\r\n"
        #expect(read(line + "GET / HTTP/1.1\r\n") == .header(source: try! SocketAddress(ipAddress: "192.0.2.7", port: 51234), length: line.utf8.count))
        #expect(source(read("PROXY TCP6 2001:db8::7 2001:db8::1 40000 8443\r\n"))! == ("2001:db8::7", 40000))
        #expect(read("PROXY UNKNOWN\r\n") == .header(source: nil, length: 15))
        #expect(read("PROXY TCP4 192.0.2.7 198.51") == .incomplete)
        #expect(read("PRO") == .incomplete)
    }

    @Test("v1: a malformed or overlong line, or a connection that does not start with one, is refused")
    func version1Refusals() {
        for text in [
            "GET / HTTP/1.1\r\n", "PROXY TCP4 192.0.2.7 198.51.100.1 51234\r\n", "PROXY TCP4 2001:db8::7 198.51.100.1 1 2\r\n",
            "PROXY TCP4 192.0.2.7 198.51.100.1 70000 443\r\n", "PROXY TCP4 not-an-address 198.51.100.1 1 2\r\n",
            "PROXY TCP4 " + String(repeating: "1", count: 120),
        ] {
            guard case .invalid = read(text) else {
                Issue.record("accepted: \(text)")
                continue
            }
        }
    }

    /// A v2 header: signature, version 2 and `command`, `family`, then `block` (its length first).
    private func v2(command: UInt8 = 1, family: UInt8, block: [UInt8]) -> [UInt8] {
        ProxyProtocolHeader.v2Signature + [0x20 | command, family, UInt8(block.count >> 8), UInt8(block.count & 0xFF)] + block
    }

    @Test("v2: IPv4 and IPv6 sources, TLVs after the addresses skipped; LOCAL (a balancer's health check) carries none")
    func version2() {
        let ipv4 = v2(family: 0x11, block: [192, 0, 2, 7, 198, 51, 100, 1, 0xC8, 0x22, 0x01, 0xBB] + [0x01, 0x00, 0x02, 0x68, 0x32])
        #expect(source(read(ipv4 + Array("GET".utf8)))! == ("192.0.2.7", 51234))
        guard case .header(_, let length) = read(ipv4) else { return }
        #expect(length == ipv4.count)
        let ipv6Source: [UInt8] = [0x20, 0x01, 0x0D, 0xB8] + [UInt8](repeating: 0, count: 11) + [7]
        let ipv6 = v2(family: 0x21, block: ipv6Source + [UInt8](repeating: 0, count: 16) + [0x9C, 0x40, 0x20, 0xFB])
        #expect(source(read(ipv6))! == ("2001:db8::7", 40000))
        #expect(read(v2(command: 0, family: 0x00, block: [])) == .header(source: nil, length: 16))
        #expect(read(Array(ipv4.prefix(20))) == .incomplete)
        #expect(read(Array(ProxyProtocolHeader.v2Signature.prefix(5))) == .incomplete)
    }

    @Test("v2: another version, another command, or a block too short for its family is refused")
    func version2Refusals() {
        var otherVersion = v2(family: 0x11, block: [UInt8](repeating: 0, count: 12))
        otherVersion[12] = 0x31
        var otherCommand = v2(family: 0x11, block: [UInt8](repeating: 0, count: 12))
        otherCommand[12] = 0x22
        for bytes in [otherVersion, otherCommand, v2(family: 0x11, block: [1, 2, 3])] {
            guard case .invalid = read(bytes) else {
                Issue.record("accepted: \(bytes)")
                continue
            }
        }
    }
}
