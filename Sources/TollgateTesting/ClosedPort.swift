#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A port on 127.0.0.1 where connections are refused, reliably: a TCP socket is bound to it
/// but never listens, so no other test can take the port while this one holds it.
public final class ClosedPort: Sendable {
    /// The port.
    public let port: Int
    private let descriptor: Int32

    /// Reserves a port.
    public init() {
        // Binding 127.0.0.1:0 fails only when the system is out of sockets or ports.
        let socket = LoopbackSocket.open(listening: false)!
        self.descriptor = socket.descriptor
        self.port = socket.port
    }

    /// Holds `port` on 127.0.0.1 the same way — for a port a test's server just let go, which
    /// the system may otherwise hand the next socket bound to port 0 (a proxy started next would
    /// then be listening where the test expects nothing). Nil when the port is taken already.
    public init?(holding port: Int) {
        guard let socket = LoopbackSocket.open(port: port, reuseAddress: true, listening: false) else { return nil }
        self.descriptor = socket.descriptor
        self.port = port
    }

    deinit { close(descriptor) }
}
