import NIOCore

/// Opens a tunnel through an HTTP upstream proxy: sends `CONNECT host:port`, reads the proxy's
/// answer, and completes ``established`` once a 2xx came back (any other answer fails it with
/// the status line). The pool then removes this handler and speaks TLS to the origin through the
/// tunnel.
///
/// The channel has auto-read off (as every pool connection): the handler asks for bytes itself
/// until the answer's head is complete. Under a TLS connection bytes after the head cannot come
/// before the client's hello, and any that do are a protocol error; under a stream task
/// (`passesLeftover`) the origin may speak first (an SSH or SMTP banner), and what followed the
/// head is passed on down the pipeline.
final class UpstreamConnectHandler: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// The longest answer head read from the proxy.
    static let maximumHeadBytes = 16 * 1024

    private let target: String
    private var received: ByteBuffer?
    private var done = false
    /// Succeeds when the proxy answered 2xx; fails with the reason otherwise.
    let established: EventLoopPromise<Void>
    /// Whether bytes after the answer's head go on down the pipeline (else they are an error).
    private let passesLeftover: Bool

    /// A handler for a tunnel to `host:port` (IPv6 literals without brackets).
    init(host: String, port: Int, eventLoop: any EventLoop, passesLeftover: Bool = false) {
        self.target = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        self.established = eventLoop.makePromise(of: Void.self)
        self.passesLeftover = passesLeftover
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { sendConnect(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        sendConnect(context: context)
        context.fireChannelActive()
    }

    private func sendConnect(context: ChannelHandlerContext) {
        let request = "CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\n\r\n"
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: request)), promise: nil)
        context.read()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !done else { return }
        var bytes = unwrapInboundIn(data)
        received.setOrWriteBuffer(&bytes)
        guard let buffer = received else { return }
        let view = buffer.readableBytesView
        guard let end = view.firstRange(of: [0x0D, 0x0A, 0x0D, 0x0A]) else {
            if buffer.readableBytes > Self.maximumHeadBytes {
                finish(context: context, failure: "the upstream proxy's answer to CONNECT has an oversized head")
            }
            return
        }
        let head = String(decoding: view[view.startIndex..<end.lowerBound], as: UTF8.self)
        let statusLine = head.split(separator: "\r\n", maxSplits: 1).first.map(String.init) ?? ""
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
            finish(context: context, failure: "the upstream proxy's answer to CONNECT \(target) is not HTTP: \(statusLine.prefix(80))")
            return
        }
        guard (200..<300).contains(status) else {
            finish(context: context, failure: "the upstream proxy refused CONNECT \(target): \(statusLine)")
            return
        }
        guard end.upperBound == view.endIndex || passesLeftover else {
            finish(context: context, failure: "the upstream proxy sent bytes before the TLS handshake")
            return
        }
        done = true
        if end.upperBound < view.endIndex {
            let leftover = buffer.getSlice(at: end.upperBound, length: view.endIndex - end.upperBound)
            received = nil
            if let leftover { context.fireChannelRead(wrapInboundOut(leftover)) }
        }
        established.succeed(())
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if !done { context.read() }
        context.fireChannelReadComplete()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !done { finish(context: context, failure: "the upstream proxy closed the connection before answering CONNECT \(target)") }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if !done { finish(context: context, failure: "the connection to the upstream proxy failed: \(error)") }
        context.fireErrorCaught(error)
    }

    private func finish(context: ChannelHandlerContext, failure: String) {
        guard !done else { return }
        done = true
        established.fail(SessionError(.cannotConnectToHost, nil, failure))
        context.close(promise: nil)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        if !done {
            done = true
            established.fail(SessionError(.cannotConnectToHost, nil, "the tunnel through the upstream proxy was abandoned"))
        }
    }
}
