import NIOCore
import NIOPosix
import TollgatePolicy

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension ServerBootstrap {
    /// The socket options of a listener with `throttle`: each connection's sends paced by the
    /// kernel at `download` (`SO_MAX_PACING_RATE`: TCP paces on its own since Linux 4.13, no
    /// queueing discipline needed), and a small receive buffer under `upload`.
    func throttling(_ throttle: PolicyConfiguration.Listener.Throttle?) -> ServerBootstrap {
        guard let throttle else { return self }
        var bootstrap = self
        if let download = throttle.download {
            // The kernel paces by segment, and loopback's 64 KiB segments went out at twice the
            // rate asked at 100 KB/s (measured); an Ethernet-sized segment keeps it to the rate.
            // Set on the listening socket: connections take it from there, and a client is told it
            // in the handshake.
            bootstrap =
                bootstrap
                .serverChannelOption(ChannelOptions.Types.SocketOption(level: .tcp, name: .init(rawValue: TCP_MAXSEG)), value: 1400)
                .childChannelOption(
                    ChannelOptions.Types.SocketOption(level: .socket, name: .init(rawValue: SO_MAX_PACING_RATE)),
                    value: SocketOptionValue(download)
                )
        }
        if let upload = throttle.upload {
            // The kernel's receive buffer is where a client's upload goes before the throttle
            // reads it: kept to a quarter second of the rate, an uploader's progress follows the rate
            // instead of megabytes landing at once.
            let buffer = min(max(upload / 4, 4 << 10), 256 << 10)
            bootstrap = bootstrap.serverChannelOption(.socketOption(.so_rcvbuf), value: SocketOptionValue(buffer))
        }
        return bootstrap
    }
}
