import NIOConcurrencyHelpers
public import TollgateHTTP
import TollgatePolicy

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The addresses the proxy itself listens on (every proxy and admin listener), which no request
/// or tunnel may go to: a request to the proxy through the proxy would loop.
///
/// A listener on a wildcard address (`0.0.0.0`, `::`) is reachable at every local address, so a
/// destination matches it when its port is the listener's and the address is loopback,
/// unspecified, or one of this machine's interface addresses. A listener on a loopback address
/// is matched by any loopback or unspecified destination on its port (Linux connects `0.0.0.0`
/// to the local host).
public final class OwnListeners: Sendable {
    private struct Listener: Hashable {
        var address: [UInt8]
        var port: Int
    }

    private let listeners = NIOLockedValueBox<Set<Listener>>([])
    private let interfaceAddresses = NIOLockedValueBox<[[UInt8]]?>(nil)

    /// This proxy's member of `CDN-Loop` (RFC 8586), `tollgate-` and 8 random hex digits, new at
    /// each start: added to every request it forwards, and a request that already carries it has
    /// come round to this proxy again (``CDNLoop``) — the loops the address check above cannot see
    /// (through a parent proxy, or a load balancer in front of this instance).
    public let loopIdentifier: String

    /// Whether a request with `fields` has passed this proxy before: it carries ``loopIdentifier``
    /// in `CDN-Loop`.
    public func hasForwarded(_ fields: HeaderFields) -> Bool {
        CDNLoop.names(loopIdentifier, in: fields)
    }

    /// An empty registry; servers add their bound addresses as they start.
    public init() {
        let random = UInt32.random(in: 0...UInt32.max)
        let hex = String(random, radix: 16)
        loopIdentifier = "tollgate-" + String(repeating: "0", count: 8 - hex.count) + hex
    }

    /// Adds a bound listener (host must be an IP address; a name is resolved by the system at bind
    /// time, so the bound address is what is registered).
    public func register(_ address: ListenAddress) {
        guard let bytes = CIDR.addressBytes(address.host) else { return }
        listeners.withLockedValue {
            _ = $0.insert(Listener(address: CanonicalHost(bytes).address ?? bytes, port: address.port))
        }
    }

    /// Removes a listener that closed.
    public func unregister(_ address: ListenAddress) {
        guard let bytes = CIDR.addressBytes(address.host) else { return }
        listeners.withLockedValue {
            _ = $0.remove(Listener(address: CanonicalHost(bytes).address ?? bytes, port: address.port))
        }
    }

    /// Whether a connection to `address` (canonical, 4 or 16 bytes) and `port` reaches one of the
    /// proxy's listeners.
    func contains(address: [UInt8], port: Int) -> Bool {
        // Most destinations share no port with a listener: answer that without copying the set.
        let candidates = listeners.withLockedValue { all in
            all.contains { $0.port == port } ? all.filter { $0.port == port } : []
        }
        guard !candidates.isEmpty else { return false }
        for listener in candidates {
            if listener.address == address { return true }
            if Self.isUnspecified(address) { return true }
            if Self.isUnspecified(listener.address), CIDR.isLoopback(address) || localAddresses.contains(address) {
                return true
            }
            if CIDR.isLoopback(listener.address), CIDR.isLoopback(address) { return true }
        }
        return false
    }

    private var localAddresses: [[UInt8]] {
        if let known = interfaceAddresses.withLockedValue({ $0 }) { return known }
        let found = Self.interfaceAddresses()
        interfaceAddresses.withLockedValue { $0 = found }
        return found
    }

    static func isUnspecified(_ address: [UInt8]) -> Bool {
        address.count == 4 ? address[0] == 0 : address.allSatisfy { $0 == 0 }
    }

    /// Every address of this machine's interfaces (getifaddrs).
    private static func interfaceAddresses() -> [[UInt8]] {
        var first: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&first) == 0, let head = first else { return [] }
        defer { freeifaddrs(head) }
        var found: [[UInt8]] = []
        var cursor: UnsafeMutablePointer<ifaddrs>? = head
        while let entry = cursor {
            if let address = entry.pointee.ifa_addr, let bytes = canonicalNetworkAddressBytes(address) {
                found.append(bytes)
            }
            cursor = entry.pointee.ifa_next
        }
        return found
    }
}
