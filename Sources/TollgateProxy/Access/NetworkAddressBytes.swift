import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The 4 (IPv4) or 16 (IPv6) network bytes of a socket address, as the C library gives it
/// (`getaddrinfo`, `getifaddrs`, an accepted or connected socket); nil for other families.
/// IPv4-mapped IPv6 addresses are left as 16 bytes: callers that compare with IPv4 rules
/// canonicalize them (``CanonicalHost``).
func networkAddressBytes(_ address: UnsafePointer<sockaddr>) -> [UInt8]? {
    switch Int32(address.pointee.sa_family) {
    case AF_INET:
        var value = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
        return withUnsafeBytes(of: &value) { Array($0) }
    case AF_INET6:
        var value = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
        return withUnsafeBytes(of: &value) { Array($0) }
    default:
        return nil
    }
}

/// ``networkAddressBytes(_:)`` as address rules compare them: an IPv4-mapped IPv6 address as its
/// four IPv4 bytes (``CanonicalHost``'s form).
func canonicalNetworkAddressBytes(_ address: UnsafePointer<sockaddr>) -> [UInt8]? {
    guard let bytes = networkAddressBytes(address) else { return nil }
    return bytes.count == 16 ? CanonicalHost(bytes).address ?? [] : bytes
}

extension SocketAddress {
    /// ``networkAddressBytes(_:)`` of this address: copied from the `sockaddr`, not formatted as
    /// text and parsed back (a client's address is read for every connection).
    var networkBytes: [UInt8]? {
        withSockAddr { pointer, _ in networkAddressBytes(pointer) }
    }
}
