import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// What `access.rate-limit` and `access.connection-limit` count as one client: an IPv4 address,
/// or the network of an IPv6 address to `access.ipv6-client-prefix` bits (default 64). A host
/// given an IPv6 /64 — what a home line or a cloud machine gets — picks any of its 2^64 addresses
/// at will: counted by the whole address, it would have a fresh limit on every connection. (nginx
/// counts `$binary_remote_addr` whole; rate limiters on the open internet count /64s.) Pure.
enum ClientLimitKey {
    /// The key of a client whose address is `text` (as a socket address prints it) and
    /// `bytes` (4 or 16, IPv4-mapped IPv6 taken as IPv4): the text itself for IPv4, or the IPv6
    /// network to `ipv6Prefix` bits, as `2001:db8:1:2::/64` (the text unchanged at 128).
    static func of(text: String, bytes: [UInt8]?, ipv6Prefix: Int) -> String {
        guard let bytes, bytes.count == 16, ipv6Prefix < 128 else { return text }
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            return text  // IPv4-mapped: one IPv4 client
        }
        var network = bytes
        for index in 0..<16 {
            let kept = min(8, max(0, ipv6Prefix - index * 8))
            network[index] &= kept == 8 ? 0xFF : UInt8(truncatingIfNeeded: 0xFF << (8 - kept))
        }
        var address = in6_addr()
        withUnsafeMutableBytes(of: &address) { $0.copyBytes(from: network) }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count)) != nil else { return text }
        return String(cString: buffer) + "/\(ipv6Prefix)"
    }

    /// The key of a socket address.
    static func of(_ address: SocketAddress, ipv6Prefix: Int) -> String {
        of(text: address.addressText ?? "-", bytes: address.networkBytes, ipv6Prefix: ipv6Prefix)
    }
}
