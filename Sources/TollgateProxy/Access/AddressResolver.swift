import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import TollgateLoop
import TollgateSession

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Resolves a host name to every address it has, off the event loop (getaddrinfo blocks), so the
/// destination rules can be checked against all of them before a connection is made.
///
/// Answers are kept for ``cacheLifetime`` (getaddrinfo gives no TTL), so a busy proxy does not
/// make one lookup per request; failures are not kept.
struct AddressResolver: Sendable {
    /// Why a name did not resolve.
    struct Failure: Error, Sendable, CustomStringConvertible {
        let description: String
    }

    /// How long an answer is reused.
    static let cacheLifetime: TimeAmount = .seconds(5)
    /// The most names kept; past it the cache starts afresh.
    static let cacheCapacity = 4096

    private final class Cache: Sendable {
        let entries = NIOLockedValueBox<[String: (addresses: [[UInt8]], expires: NIODeadline)]>([:])
        /// Lookups started (answers from the cache not counted): what offline mode must keep at 0.
        let lookups = NIOLockedValueBox(0)
    }

    let threadPool: NIOThreadPool
    private let cache = Cache()

    init(threadPool: NIOThreadPool = NameLookupThreads.pool) {
        self.threadPool = threadPool
    }

    /// The addresses of `host` (4 or 16 bytes each), IPv4 and IPv6, in getaddrinfo's order.
    func resolve(_ host: CanonicalHost, on eventLoop: any EventLoop) -> EventLoopFuture<[[UInt8]]> {
        if let address = host.address { return eventLoop.makeSucceededFuture([address]) }
        let name = host.text
        let now = TickClock.now
        if let known = cache.entries.withLockedValue({ $0[name] }), known.expires > now {
            return eventLoop.makeSucceededFuture(known.addresses)
        }
        let cache = self.cache
        cache.lookups.withLockedValue { $0 += 1 }
        return threadPool.runIfActive(eventLoop: eventLoop) {
            let addresses = try Self.lookup(name)
            cache.entries.withLockedValue { entries in
                if entries.count >= Self.cacheCapacity { entries = [:] }
                entries[name] = (addresses, .now() + Self.cacheLifetime)
            }
            return addresses
        }
    }

    /// How many names this resolver has looked up (cached answers not counted).
    var lookupCount: Int { cache.lookups.withLockedValue { $0 } }

    private static func lookup(_ name: String) throws -> [[UInt8]] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var result: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(name, nil, &hints, &result)
        guard status == 0, let first = result else {
            throw Failure(description: "cannot resolve \(name): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(first) }
        var addresses: [[UInt8]] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let info = cursor {
            if let sockaddr = info.pointee.ai_addr, let bytes = canonicalNetworkAddressBytes(sockaddr),
                !addresses.contains(bytes)
            {
                addresses.append(bytes)
            }
            cursor = info.pointee.ai_next
        }
        guard !addresses.isEmpty else { throw Failure(description: "no address for \(name)") }
        return addresses
    }
}
