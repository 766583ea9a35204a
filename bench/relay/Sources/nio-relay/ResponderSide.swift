import NIOCore
import NIOPosix

/// `nio-relay serve`: answers every request head on a connection with the same response, held in
/// memory once (each write is a slice of one buffer, so nothing is copied per request).
final class ResponderSide: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let response: ByteBuffer
    /// Bytes of a head not yet ended (a head cut across reads).
    private var pending: ByteBuffer?
    private var unflushed = false
    private var closeAfterFlush = false

    init(response: ByteBuffer) { self.response = response }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        if var held = pending {
            held.writeBuffer(&bytes)
            bytes = held
            pending = nil
        }
        // One response per "\r\n\r\n": wrk sends GETs without bodies.
        while let headLength = bytes.withUnsafeReadableBytes(Self.headLength) {
            if bytes.withUnsafeReadableBytes({ Self.asksToClose($0.prefix(headLength)) }) {
                closeAfterFlush = true
            }
            bytes.moveReaderIndex(forwardBy: headLength)
            context.write(wrapOutboundOut(response), promise: nil)
            unflushed = true
        }
        if bytes.readableBytes > 0 { pending = bytes }
    }

    /// The length of the first head in `bytes` (through its "\r\n\r\n"), nil when none ended.
    static func headLength(_ bytes: UnsafeRawBufferPointer) -> Int? {
        guard bytes.count >= 4 else { return nil }
        var i = 3
        while i < bytes.count {
            if bytes[i] == 10, bytes[i - 1] == 13, bytes[i - 2] == 10, bytes[i - 3] == 13 { return i + 1 }
            i += 1
        }
        return nil
    }

    /// Whether a head says `Connection: close` (as wrk's `-H "Connection: close"` writes it).
    static func asksToClose(_ head: UnsafeRawBufferPointer.SubSequence) -> Bool {
        let needle = Array("Connection: close".utf8)
        guard head.count >= needle.count else { return false }
        return (head.startIndex...(head.endIndex - needle.count)).contains { start in
            head[start] == needle[0] && head[start..<(start + needle.count)].elementsEqual(needle)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        guard unflushed else { return }
        unflushed = false
        context.flush()
        if closeAfterFlush { context.close(promise: nil) }
    }
}

/// Serves `bodyBytes` of body to every request on 127.0.0.1:`port`, until killed.
func serve(port: Int, bodyBytes: Int) throws {
    var response = ByteBuffer()
    response.writeString(
        "HTTP/1.1 200 OK\r\nServer: nio-relay\r\nContent-Type: application/octet-stream\r\n"
            + "Content-Length: \(bodyBytes)\r\nCache-Control: max-age=3600\r\n\r\n"
    )
    response.writeRepeatingByte(UInt8(ascii: "x"), count: bodyBytes)
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let server = try ServerBootstrap(group: group)
        .serverChannelOption(.backlog, value: 1024)
        .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
        .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
        .childChannelInitializer { $0.pipeline.addHandler(ResponderSide(response: response)) }
        .bind(host: "127.0.0.1", port: port)
        .wait()
    print("nio-relay serving \(bodyBytes) bytes on 127.0.0.1:\(port)")
    try server.closeFuture.wait()
}
