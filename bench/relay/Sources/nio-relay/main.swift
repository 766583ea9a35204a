// nio-relay LISTEN-PORT UPSTREAM-PORT
// nio-relay serve LISTEN-PORT BODY-BYTES
//
// The least a SwiftNIO proxy can do per request, measured beside Tollgate by the bench scripts.
//
// Relay (pass-through rows): every client connection gets its own upstream connection to
// 127.0.0.1:UPSTREAM-PORT, and bytes are copied both ways as they come — no HTTP parsing, no
// header rewriting, no cache lookup, no access control, no pooling.
//
// Serve (cache-hit rows, `ResponderSide`): one fixed response of BODY-BYTES from memory for every
// request head, keep-alive unless the request says `Connection: close` — no parsing beyond finding
// the head's end, no lookup, no header building, no log. The least any cache on SwiftNIO does for a
// hit held in memory.
//
// One event loop thread, like Tollgate pinned to one core. Whatever either mode reaches is an upper
// bound for any proxy built on SwiftNIO on the same machine.
import NIOCore
import NIOPosix

/// One side of a relayed connection: what it reads is written to its peer, flushed once per
/// read burst (at `channelReadComplete`), as Tollgate flushes.
final class RelaySide: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer

    // Only touched on the one event loop both channels share.
    private var peer: Channel?
    private var waiting: [ByteBuffer] = []
    private var unflushed = false

    init(peer: Channel? = nil) { self.peer = peer }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        if let peer {
            peer.write(bytes, promise: nil)
            unflushed = true
        } else {
            waiting.append(bytes)  // the upstream connection is not up yet
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        guard unflushed, let peer else { return }
        unflushed = false
        peer.flush()
    }

    func channelInactive(context: ChannelHandlerContext) {
        peer?.close(promise: nil)
        peer = nil
    }

    /// The upstream connection is up: it receives what the client sent meanwhile.
    func connected(to channel: Channel) {
        peer = channel
        guard !waiting.isEmpty else { return }
        for bytes in waiting { channel.write(bytes, promise: nil) }
        waiting = []
        channel.flush()
    }
}

let arguments = CommandLine.arguments
if arguments.count == 4, arguments[1] == "serve", let listenPort = Int(arguments[2]), let size = Int(arguments[3]) {
    try serve(port: listenPort, bodyBytes: size)
    exit(0)
}
guard arguments.count == 3, let listenPort = Int(arguments[1]), let upstreamPort = Int(arguments[2]) else {
    print("usage: nio-relay LISTEN-PORT UPSTREAM-PORT")
    exit(2)
}
let upstream = try SocketAddress(ipAddress: "127.0.0.1", port: upstreamPort)
let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
let server = try ServerBootstrap(group: group)
    .serverChannelOption(.backlog, value: 1024)
    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
    .childChannelInitializer { client in
        let clientSide = RelaySide()
        return client.pipeline.addHandler(clientSide).flatMap {
            ClientBootstrap(group: client.eventLoop)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .channelInitializer { $0.pipeline.addHandler(RelaySide(peer: client)) }
                .connect(to: upstream)
                .map { clientSide.connected(to: $0) }
        }
    }
    .bind(host: "127.0.0.1", port: listenPort)
    .wait()
print("nio-relay on 127.0.0.1:\(listenPort) to 127.0.0.1:\(upstreamPort)")
try server.closeFuture.wait()
