#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An IPv4 or IPv6 network, `ADDRESS/PREFIX` (`10.0.0.0/8`, `fd00::/8`), or one address.
///
/// Used for the client list and the destination rules of `access`, and meant for the proxy's
/// ACL. Parsing is strict: a network with host bits set (`192.168.1.1/24`) is refused with the
/// network it probably meant, since silently masking it hides a typo in an access rule.
///
/// IPv4-mapped IPv6 addresses (`::ffff:10.1.2.3`, what a dual-stack socket reports for an IPv4
/// client) are compared as the IPv4 address they carry, so `10.0.0.0/8` contains
/// `::ffff:10.1.2.3`, and an IPv6 network such as `::ffff:0:0/96` or `::/0` contains IPv4
/// addresses.
public struct CIDR: Hashable, Sendable, CustomStringConvertible {
    /// The network's address in network byte order, 4 or 16 bytes, host bits zero.
    public let address: [UInt8]
    /// The number of leading bits that must match, 0…32 or 0…128.
    public let prefixLength: Int

    /// Why a text is not a network; the message quotes it and says what is wrong.
    public struct ParseError: Error, Hashable, Sendable, CustomStringConvertible {
        /// What is wrong, in one line.
        public let description: String
    }

    /// `127.0.0.0/8`.
    public static let loopbackIPv4 = CIDR(uncheckedAddress: [127, 0, 0, 0], prefixLength: 8)
    /// `::1/128`.
    public static let loopbackIPv6 = CIDR(
        uncheckedAddress: [UInt8](repeating: 0, count: 15) + [1],
        prefixLength: 128
    )

    private init(uncheckedAddress: [UInt8], prefixLength: Int) {
        self.address = uncheckedAddress
        self.prefixLength = prefixLength
    }

    /// A network from its bytes and prefix length; host bits past the prefix are cleared.
    /// Nil when the address is not 4 or 16 bytes or the prefix is out of range.
    public init?(address: [UInt8], prefixLength: Int) {
        guard address.count == 4 || address.count == 16, (0...address.count * 8).contains(prefixLength) else {
            return nil
        }
        self.init(uncheckedAddress: CIDR.masked(address, prefixLength), prefixLength: prefixLength)
    }

    /// Parses `ADDRESS/PREFIX` or a single `ADDRESS`; nil when it is not valid.
    public init?(_ text: String) {
        guard let parsed = try? CIDR.parse(text) else { return nil }
        self = parsed
    }

    /// Parses `ADDRESS/PREFIX` or a single `ADDRESS` (a /32 or /128 network).
    public static func parse(_ text: String) throws(ParseError) -> CIDR {
        let addressText: Substring
        var prefix: Int?
        if let slash = text.firstIndex(of: "/") {
            addressText = text[..<slash]
            let prefixText = text[text.index(after: slash)...]
            guard !prefixText.isEmpty, prefixText.count <= 3, prefixText.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
                let value = Int(prefixText)
            else {
                throw ParseError(description: "\"\(text)\": the prefix length after / must be a number")
            }
            prefix = value
        } else {
            addressText = Substring(text)
        }
        guard let bytes = addressBytes(String(addressText)), !addressText.hasPrefix("[") else {
            throw ParseError(description: "\"\(text)\" is not an IP address or network (ADDRESS/PREFIX)")
        }
        let bits = bytes.count * 8
        let length = prefix ?? bits
        guard length <= bits else {
            let family = bytes.count == 4 ? "IPv4" : "IPv6"
            throw ParseError(description: "\"\(text)\": an \(family) prefix length is 0 to \(bits), not \(length)")
        }
        let network = masked(bytes, length)
        guard network == bytes else {
            let suggestion = CIDR(uncheckedAddress: network, prefixLength: length)
            throw ParseError(description: "\"\(text)\" has host bits set; did you mean \(suggestion)?")
        }
        return CIDR(uncheckedAddress: network, prefixLength: length)
    }

    /// The network bytes of an IPv4 or IPv6 address (brackets allowed: `[::1]`), else nil.
    /// Zone identifiers (`fe80::1%eth0`) are not accepted.
    public static func addressBytes(_ text: String) -> [UInt8]? {
        var host = Substring(text)
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        guard !host.isEmpty, host.utf8.count <= 45 else { return nil }
        var v4 = [UInt8](repeating: 0, count: 4)
        if inet_pton(AF_INET, String(host), &v4) == 1 { return v4 }
        var v6 = [UInt8](repeating: 0, count: 16)
        if inet_pton(AF_INET6, String(host), &v6) == 1 { return v6 }
        return nil
    }

    /// The usual text form of 4 or 16 network bytes (IPv6 compressed), else nil.
    public static func addressText(_ bytes: [UInt8]) -> String? {
        let family: Int32
        switch bytes.count {
        case 4: family = AF_INET
        case 16: family = AF_INET6
        default: return nil
        }
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { text -> String? in
            guard inet_ntop(family, bytes, text.baseAddress, socklen_t(text.count)) != nil else { return nil }
            return String(cString: text.baseAddress!)
        }
    }

    /// Whether `address` (4 or 16 network bytes) is a loopback address: in `127.0.0.0/8` (also
    /// IPv4-mapped) or `::1`.
    public static func isLoopback(_ address: [UInt8]) -> Bool {
        loopbackIPv4.contains(address) || loopbackIPv6.contains(address)
    }

    /// Whether this is an IPv6 network.
    public var isIPv6: Bool { address.count == 16 }

    /// Whether `address` (4 or 16 network bytes) is in this network; IPv4-mapped IPv6 addresses
    /// count as the IPv4 address they carry.
    public func contains(_ other: [UInt8]) -> Bool {
        // Compared byte by byte in place: this runs for every request's destination and client.
        other.withUnsafeBufferPointer { other in
            let count = address.count
            let widensIPv4 = count == 16 && other.count == 4
            if count == 4, other.count == 16 {
                guard CIDR.isIPv4Mapped(other) else { return false }
            } else if !widensIPv4, other.count != count {
                return false
            }
            let offset = other.count - count  // 12 for a mapped address checked against IPv4
            for index in 0..<count {
                let bitsHere = max(0, min(8, prefixLength - index * 8))
                if bitsHere == 0 { break }
                let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bitsHere))
                let byte: UInt8
                if widensIPv4 {
                    byte = index < 12 ? (index < 10 ? 0 : 0xFF) : other[index - 12]
                } else {
                    byte = other[index + offset]
                }
                if byte & mask != address[index] { return false }
            }
            return true
        }
    }

    /// Whether the address written in `text` is in this network; false when it is not an address.
    public func contains(_ text: String) -> Bool {
        CIDR.addressBytes(text).map(contains) ?? false
    }

    /// `ADDRESS/PREFIX`.
    public var description: String { "\(CIDR.addressText(address) ?? "?")/\(prefixLength)" }

    /// Parses a network with an optional port: `10.0.0.0/8`, `10.1.2.3:22`, `10.0.0.0/8:443`,
    /// `[fd00::/8]:443`, `fd00::/8`. Returns nil when the text does not look like an address at all
    /// (a host name), and throws when it does but is not a valid one.
    static func parseNetworkWithPort(_ text: String) throws(ParseError) -> (CIDR, Int?)? {
        func port(_ portText: Substring) throws(ParseError) -> Int {
            guard !portText.isEmpty, portText.count <= 5, portText.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
                let value = Int(portText), (1...65535).contains(value)
            else { throw ParseError(description: "\"\(text)\": the port must be a number from 1 to 65535") }
            return value
        }
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else {
                throw ParseError(description: "\"\(text)\": unterminated [")
            }
            let inner = String(text[text.index(after: text.startIndex)..<close])
            let after = text[text.index(after: close)...]
            let network = try parse(inner)
            if after.isEmpty { return (network, nil) }
            guard after.hasPrefix(":") else { throw ParseError(description: "\"\(text)\": expected :PORT after ]") }
            return (network, try port(after.dropFirst()))
        }
        // IPv4 is digits and dots (a port after one colon); IPv6 has two colons or more. Anything
        // else with letters is a host name, even one made of hex digits such as `cafe.be`.
        let colons = text.filter { $0 == ":" }.count
        let beforePort = colons == 1 ? text.prefix { $0 != ":" } : Substring(text)
        let dottedDecimal = !beforePort.isEmpty && beforePort.allSatisfy { ("0"..."9").contains($0) || $0 == "." }
        guard text.contains("/") || colons >= 2 || dottedDecimal else { return nil }
        if colons == 1, let colon = text.firstIndex(of: ":") {
            let network = try parse(String(text[..<colon]))
            guard !network.isIPv6 else { throw ParseError(description: "\"\(text)\" is not an IP address or network") }
            return (network, try port(text[text.index(after: colon)...]))
        }
        return (try parse(text), nil)
    }

    private static func isIPv4Mapped(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        bytes.count == 16 && bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF
    }

    private static func masked(_ bytes: [UInt8], _ prefixLength: Int) -> [UInt8] {
        var result = bytes
        for index in result.indices {
            let bitsHere = max(0, min(8, prefixLength - index * 8))
            let mask: UInt8 = bitsHere == 0 ? 0 : UInt8(truncatingIfNeeded: 0xFF << (8 - bitsHere))
            result[index] &= mask
        }
        return result
    }
}
