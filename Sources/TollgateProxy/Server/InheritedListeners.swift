import Foundation
import NIOConcurrencyHelpers
public import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Listening sockets a service manager opened and passed to this process (systemd's socket
/// activation, `sd_listen_fds(3)`): `LISTEN_PID` names this process, `LISTEN_FDS` says how many
/// descriptors from 3 on are its sockets. A listener whose address is one of theirs serves that
/// socket instead of binding its own (``take(_:)``).
///
/// What it gives: the socket outlives the process, so during a restart (an upgrade) clients wait
/// in its listen queue instead of being refused; and the manager binds it, so a service without
/// privileges can serve port 443. Written here rather than linked from libsystemd, as the
/// notification socket is (the protocol is three environment variables).
public final class InheritedListeners: Sendable {
    /// One socket passed: its descriptor and the address it is bound to.
    public struct Socket: Sendable {
        /// The descriptor (3 and up).
        public let descriptor: CInt
        /// Where it listens.
        public let address: SocketAddress
    }

    /// Why the passed descriptors cannot be used; the message says which and why.
    public struct Failure: Error, CustomStringConvertible {
        /// What is wrong, in one line.
        public let description: String
    }

    /// The first passed descriptor (`SD_LISTEN_FDS_START`).
    public static let firstDescriptor: CInt = 3

    private let sockets: NIOLockedValueBox<[Socket]>

    /// The sockets `sockets`, none taken yet.
    public init(_ sockets: [Socket] = []) {
        self.sockets = NIOLockedValueBox(sockets)
    }

    /// How many descriptors `environment` passes to the process `pid`: 0 when `LISTEN_FDS` is
    /// unset or `LISTEN_PID` names another process (a variable a parent left, which its child
    /// must ignore).
    public static func passedCount(environment: [String: String], pid: pid_t) throws(Failure) -> Int {
        guard let countText = environment["LISTEN_FDS"] else { return 0 }
        if let pidText = environment["LISTEN_PID"] {
            guard let named = pid_t(pidText) else { throw Failure(description: "LISTEN_PID=\(pidText) is not a process id") }
            guard named == pid else { return 0 }
        }
        guard let count = Int(countText), count >= 0, count <= 1024 else {
            throw Failure(description: "LISTEN_FDS=\(countText) is not a number of descriptors (0 to 1024)")
        }
        return count
    }

    /// The sockets the service manager passed to this process, checked (each a listening TCP
    /// socket) and marked close-on-exec; the variables are then removed from the environment, as
    /// `sd_listen_fds(1)` does, so that no child takes them for its own. Empty when none were passed.
    public static func fromEnvironment() throws(Failure) -> InheritedListeners {
        let count = try passedCount(environment: ProcessInfo.processInfo.environment, pid: getpid())
        unsetenv("LISTEN_PID")
        unsetenv("LISTEN_FDS")
        unsetenv("LISTEN_FDNAMES")
        var sockets: [Socket] = []
        for descriptor in firstDescriptor..<(firstDescriptor + CInt(count)) {
            sockets.append(Socket(descriptor: descriptor, address: try listeningAddress(of: descriptor)))
            _ = fcntl(descriptor, F_SETFD, fcntl(descriptor, F_GETFD) | FD_CLOEXEC)
        }
        return InheritedListeners(sockets)
    }

    /// The address `descriptor` listens on, when it is a listening TCP socket (IPv4 or IPv6).
    static func listeningAddress(of descriptor: CInt) throws(Failure) -> SocketAddress {
        func option(_ name: CInt) -> CInt? {
            var value: CInt = 0
            var length = socklen_t(MemoryLayout<CInt>.size)
            return getsockopt(descriptor, SOL_SOCKET, name, &value, &length) == 0 ? value : nil
        }
        let what = "descriptor \(descriptor) of LISTEN_FDS"
        guard let type = option(SO_TYPE) else {
            throw Failure(description: "\(what) is not a socket: \(String(cString: strerror(errno)))")
        }
        #if canImport(Glibc)
        let stream = CInt(SOCK_STREAM.rawValue)
        #else
        let stream = SOCK_STREAM
        #endif
        guard type == stream, option(SO_ACCEPTCONN) == 1 else {
            throw Failure(description: "\(what) is not a listening stream socket (ListenStream= in the socket unit)")
        }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard named == 0 else { throw Failure(description: "\(what): getsockname: \(String(cString: strerror(errno)))") }
        switch CInt(storage.ss_family) {
        case AF_INET:
            return withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { SocketAddress($0.pointee) } }
        case AF_INET6:
            return withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { SocketAddress($0.pointee) } }
        default:
            throw Failure(description: "\(what) is not a TCP socket (an IPv4 or IPv6 address is needed, not a unix socket)")
        }
    }

    /// Takes the socket bound to `address` — an IP address and port as a listener is configured
    /// (a host name matches none) —; nil when none was passed, or it was taken already.
    public func take(_ address: ListenAddress) -> CInt? {
        guard let wanted = try? SocketAddress(ipAddress: address.host, port: address.port) else { return nil }
        return sockets.withLockedValue { sockets in
            guard let index = sockets.firstIndex(where: { $0.address.ipAddress == wanted.ipAddress && $0.address.port == wanted.port })
            else { return nil }
            return sockets.remove(at: index).descriptor
        }
    }

    /// The addresses of the sockets not taken, as `HOST:PORT`.
    public var untaken: [String] {
        sockets.withLockedValue { $0.map { ListenAddress(host: $0.address.ipAddress ?? "?", port: $0.address.port ?? 0).description } }
    }

    /// Closes the sockets not taken.
    public func closeUntaken() {
        let left = sockets.withLockedValue { sockets in
            defer { sockets = [] }
            return sockets
        }
        for socket in left { close(socket.descriptor) }
    }
}
