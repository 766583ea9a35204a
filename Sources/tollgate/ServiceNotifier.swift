#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The service manager's notification socket (systemd's `Type=notify`, `sd_notify(3)`): `serve`
/// says `READY=1` once every listener accepts, `RELOADING=1` … `READY=1` around a SIGHUP reload,
/// and `STOPPING=1` when shutdown begins.
///
/// Written here rather than linked from libsystemd: the protocol is one datagram of
/// newline-separated `KEY=VALUE` lines sent to the unix socket named by `NOTIFY_SOCKET`, either a
/// path (`/run/systemd/notify`) or, with a leading `@`, a name in the abstract namespace. Every
/// send is best effort: a manager that went away must not stop the proxy.
final class ServiceNotifier: Sendable {
    /// The socket's address as given (`/path` or `@name`).
    let address: String
    private let descriptor: Int32

    /// The notifier of `NOTIFY_SOCKET`, or nil when it is unset, empty, or not a unix socket
    /// address this code knows (the problem is written to standard error).
    static func fromEnvironment(_ environment: [String: String]) -> ServiceNotifier? {
        guard let address = environment["NOTIFY_SOCKET"], !address.isEmpty else { return nil }
        do {
            return try ServiceNotifier(address: address)
        } catch {
            standardError(
                "tollgate: warning: NOTIFY_SOCKET=\(address): \(error.message); the service manager is not told"
            )
            return nil
        }
    }

    struct Failure: Error {
        let message: String
    }

    /// Opens a datagram socket for `address`, `/path` or `@abstract-name`.
    init(address: String) throws(Failure) {
        guard let first = address.utf8.first, first == UInt8(ascii: "/") || first == UInt8(ascii: "@") else {
            throw Failure(message: "not a unix socket path or @abstract name")
        }
        let capacity = MemoryLayout.size(ofValue: sockaddr_un().sun_path)
        guard address.utf8.count < capacity else {
            throw Failure(message: "longer than a unix socket address (\(capacity - 1) bytes)")
        }
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else {
            throw Failure(message: "socket: \(String(cString: strerror(errno)))")
        }
        self.address = address
        self.descriptor = descriptor
    }

    deinit {
        close(descriptor)
    }

    /// `READY=1`, with a status line for `systemctl status`.
    func ready(status: String? = nil) {
        send(["READY=1"] + (status.map { ["STATUS=" + $0] } ?? []))
    }

    /// `RELOADING=1` (with `MONOTONIC_USEC`, which newer managers want beside it).
    func reloading() {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let microseconds = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
        send(["RELOADING=1", "MONOTONIC_USEC=\(microseconds)", "STATUS=reloading the configuration"])
    }

    /// `STOPPING=1`: shutdown has begun.
    func stopping() {
        send(["STOPPING=1", "STATUS=stopping: finishing the exchanges in flight"])
    }

    /// Sends `lines` as one datagram; returns whether the whole datagram was sent.
    @discardableResult
    func send(_ lines: [String]) -> Bool {
        let message = Array(lines.joined(separator: "\n").utf8)
        var storage = sockaddr_un()
        storage.sun_family = sa_family_t(AF_UNIX)
        var path = Array(address.utf8)
        let isAbstract = path.first == UInt8(ascii: "@")
        if isAbstract { path[0] = 0 }  // the abstract namespace: a leading NUL, no terminator
        withUnsafeMutableBytes(of: &storage.sun_path) { bytes in
            bytes.copyBytes(from: path)  // the rest stays zero: a path is NUL-terminated
        }
        let length = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + path.count + (isAbstract ? 0 : 1)
        let sent = withUnsafePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                message.withUnsafeBytes { bytes in
                    sendto(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL), address, socklen_t(length))
                }
            }
        }
        return sent == message.count
    }
}
