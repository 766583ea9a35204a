#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A raw TCP socket bound to 127.0.0.1, listening or only bound: for tests of code that is handed
/// descriptors, and what ``ClosedPort`` holds to refuse connections.
public enum LoopbackSocket {
    /// Opens the socket on `port` (0: any free port; `reuseAddress` lets it bind a port whose
    /// last connections are still in TIME_WAIT); nil when the system refuses. The caller closes
    /// `descriptor`.
    public static func open(port: Int = 0, reuseAddress: Bool = false, listening: Bool) -> (descriptor: Int32, port: Int)? {
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { return nil }
        if reuseAddress {
            var reuse: Int32 = 1
            _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard bound == 0, !listening || listen(fd, 8) == 0 else {
            close(fd)
            return nil
        }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }
}
