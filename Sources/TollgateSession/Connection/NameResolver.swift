import NIOCore
#if canImport(Glibc)
import Glibc
#endif
import NIOPosix

/// Resolves host names off the event loop (getaddrinfo blocks), so lookup time can be measured
/// and a failure told apart from a refused connection.
struct NameResolver: Sendable {
    let threadPool: NIOThreadPool

    /// Every address of `host` for `port`, IPv4 and IPv6, in getaddrinfo's order.
    func resolve(host: String, port: Int, on eventLoop: any EventLoop) -> EventLoopFuture<[SocketAddress]> {
        if let literal = try? SocketAddress(ipAddress: host, port: port) {
            return eventLoop.makeSucceededFuture([literal])
        }
        return threadPool.runIfActive(eventLoop: eventLoop) {
            try NameResolver.lookup(host: host, port: port)
        }
    }

    private static func lookup(host: String, port: Int) throws -> [SocketAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_protocol = Int32(IPPROTO_TCP)
        var result: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &result)
        guard status == 0, let first = result else {
            throw SessionError(.cannotFindHost, nil, "cannot resolve \(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(first) }
        var addresses: [SocketAddress] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let info = cursor {
            if let sockaddr = info.pointee.ai_addr {
                switch Int32(info.pointee.ai_family) {
                case AF_INET:
                    let address = sockaddr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee }
                    addresses.append(SocketAddress(address, host: host))
                case AF_INET6:
                    let address = sockaddr.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee }
                    addresses.append(SocketAddress(address, host: host))
                default:
                    break
                }
            }
            cursor = info.pointee.ai_next
        }
        guard !addresses.isEmpty else { throw SessionError(.cannotFindHost, nil, "no address for \(host)") }
        return addresses
    }
}
