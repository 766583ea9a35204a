import Foundation
import Testing
import TollgateTesting

@Suite("Accepted client sockets", .timeLimit(.minutes(1)))
struct AcceptedSocketTests {
    /// The proxy's end of the connection whose peer port is `peerPort`, found among this
    /// process's file descriptors (the proxy runs in the test process).
    private static func acceptedSocket(listeningPort: Int, peerPort: Int) -> Int32? {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return nil }
        for entry in entries {
            guard let fd = Int32(entry) else { continue }
            var local = sockaddr_in()
            var peer = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let named = withUnsafeMutablePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            guard named == 0, local.sin_family == sa_family_t(AF_INET) else { continue }
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let connected = withUnsafeMutablePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
            }
            guard connected == 0 else { continue }
            if Int(UInt16(bigEndian: local.sin_port)) == listeningPort, Int(UInt16(bigEndian: peer.sin_port)) == peerPort {
                return fd
            }
        }
        return nil
    }

    @Test("Have TCP_NODELAY, inherited from the listening socket (no option set per connection)")
    func noDelay() async throws {
        try await withProxy { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            let peerPort = try #require(client.localPort)
            var fd: Int32?
            try await eventually("the proxy accepted the connection") {
                fd = Self.acceptedSocket(listeningPort: proxy.port, peerPort: peerPort)
                return fd != nil
            }
            var value: Int32 = 0
            var size = socklen_t(MemoryLayout<Int32>.size)
            #expect(getsockopt(try #require(fd), Int32(IPPROTO_TCP), TCP_NODELAY, &value, &size) == 0)
            #expect(value == 1)
        }
    }
}
