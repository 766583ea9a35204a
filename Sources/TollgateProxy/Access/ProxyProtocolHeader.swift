import NIOCore

/// The PROXY protocol header a load balancer sends first on each connection (HAProxy's
/// `send-proxy` and `send-proxy-v2`, AWS NLB, GCP, Envoy): the client's address as the balancer
/// saw it. Version 1 is a text line (`PROXY TCP4 192.0.2.7 198.51.100.1 51234 443\r\n`),
/// version 2 a binary block after a 12-byte signature. Read here from the bytes received so far,
/// without side effects.
enum ProxyProtocolHeader: Equatable {
    /// Not enough bytes yet to say.
    case incomplete
    /// A header of `length` bytes; `source` is the client's address, nil when the header does not
    /// carry one (v1 `UNKNOWN`, v2 `LOCAL` — a balancer's own health check — or an address
    /// family other than TCP over IPv4 or IPv6): the connection's own peer is the client then.
    case header(source: SocketAddress?, length: Int)
    /// Not a PROXY protocol header: the connection is refused.
    case invalid(String)

    /// The longest v1 line, CRLF included (the specification's 107 bytes).
    static let maximumV1Length = 107
    /// The v2 signature.
    static let v2Signature: [UInt8] = [0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A]
    /// The longest v2 header accepted (its TLVs included): larger is refused, not buffered.
    static let maximumV2Length = 16 + 4096

    /// Reads the header at the start of `bytes`.
    static func read(_ bytes: ByteBuffer) -> ProxyProtocolHeader {
        let view = bytes.readableBytesView
        let signature = view.prefix(Self.v2Signature.count)
        if Self.v2Signature.starts(with: signature) {
            return signature.count < Self.v2Signature.count ? .incomplete : readV2(Array(view.prefix(Self.maximumV2Length)))
        }
        let v1Prefix = Array("PROXY ".utf8)
        let start = view.prefix(v1Prefix.count)
        guard v1Prefix.starts(with: start) else { return .invalid("the connection did not start with a PROXY protocol header") }
        return start.count < v1Prefix.count ? .incomplete : readV1(Array(view.prefix(Self.maximumV1Length)))
    }

    /// `PROXY TCP4|TCP6 SOURCE DESTINATION SPORT DPORT\r\n` or `PROXY UNKNOWN …\r\n`.
    private static func readV1(_ bytes: [UInt8]) -> ProxyProtocolHeader {
        guard let end = bytes.indices.dropLast().first(where: { bytes[$0] == 0x0D && bytes[$0 + 1] == 0x0A }) else {
            return bytes.count >= Self.maximumV1Length ? .invalid("a PROXY v1 line longer than 107 bytes") : .incomplete
        }
        let line = String(decoding: bytes[..<end], as: UTF8.self)
        let words = line.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        if words.count >= 2, words[1] == "UNKNOWN" { return .header(source: nil, length: end + 2) }
        guard words.count == 6, words[1] == "TCP4" || words[1] == "TCP6", let port = Int(words[4]), (0...65535).contains(port),
            let destinationPort = Int(words[5]), (0...65535).contains(destinationPort),
            let source = try? SocketAddress(ipAddress: words[2], port: port),
            (try? SocketAddress(ipAddress: words[3], port: destinationPort)) != nil,
            (words[1] == "TCP4") == (source.protocol == NIOBSDSocket.ProtocolFamily.inet)
        else {
            return .invalid("a malformed PROXY v1 line: \(line)")
        }
        return .header(source: source, length: end + 2)
    }

    /// The 16-byte v2 head (signature, version and command, family and protocol, length), then
    /// the addresses and any TLVs.
    private static func readV2(_ bytes: [UInt8]) -> ProxyProtocolHeader {
        guard bytes.count >= 16 else { return .incomplete }
        let versionAndCommand = bytes[12]
        guard versionAndCommand >> 4 == 2 else { return .invalid("a PROXY v2 header of version \(versionAndCommand >> 4)") }
        let command = versionAndCommand & 0x0F
        guard command <= 1 else { return .invalid("a PROXY v2 header with command \(command)") }
        let length = 16 + Int(bytes[14]) << 8 + Int(bytes[15])
        guard length <= Self.maximumV2Length else { return .invalid("a PROXY v2 header of \(length) bytes") }
        guard bytes.count >= length else { return .incomplete }
        // LOCAL: the balancer speaking for itself (a health check); the peer is the client.
        guard command == 1 else { return .header(source: nil, length: length) }
        let block = Array(bytes[16..<length])
        func port(_ at: Int) -> Int { Int(block[at]) << 8 + Int(block[at + 1]) }
        switch bytes[13] {
        case 0x11:  // TCP over IPv4: source, destination, source port, destination port.
            guard block.count >= 12 else { return .invalid("a PROXY v2 IPv4 block of \(block.count) bytes") }
            let source = try? SocketAddress(packedIPAddress: ByteBuffer(bytes: block[0..<4]), port: port(8))
            return .header(source: source, length: length)
        case 0x21:  // TCP over IPv6.
            guard block.count >= 36 else { return .invalid("a PROXY v2 IPv6 block of \(block.count) bytes") }
            let source = try? SocketAddress(packedIPAddress: ByteBuffer(bytes: block[0..<16]), port: port(32))
            return .header(source: source, length: length)
        default:
            // UNSPEC, UDP or a Unix socket: nothing to take as the client's address.
            return .header(source: nil, length: length)
        }
    }
}
