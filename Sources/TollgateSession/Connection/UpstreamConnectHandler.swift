import Foundation
import NIOCore
import TollgateHTTP

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
///
/// A `407` offering Basic, when the session has an upstream-proxy credential
/// (``UpstreamProxyAuthentication``) it did not send yet, is answered on the same connection when
/// the proxy keeps it (the 407's body, framed by Content-Length, is skipped first); a proxy that
/// closes after its 407 fails the attempt with ``RetryWithCredential`` and the caller connects
/// again, the credential then sent from the start.
final class UpstreamConnectHandler: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// The longest answer head read from the proxy.
    static let maximumHeadBytes = 16 * 1024

    /// The proxy asked for the credential and closed the connection: connect again (the
    /// credential now goes with the first CONNECT).
    struct RetryWithCredential: Error {
        /// What a second such answer (after the retry) fails the task with.
        static func failure(_ tunnel: (host: String, port: Int)?) -> SessionError {
            let target = tunnel.map { "\($0.host):\($0.port)" } ?? "the tunnel"
            var error = SessionError(
                .cannotConnectToHost, nil,
                "the upstream proxy asked for authentication again for CONNECT \(target) and closed the connection"
            )
            error.proxyAnswer = .answered
            return error
        }
    }

    private let target: String
    private var received: ByteBuffer?
    private var done = false
    /// Bytes of a 407's body still to be skipped before the CONNECT is sent again.
    private var skipping = 0
    private let authentication: UpstreamProxyAuthentication?
    /// Whether the CONNECT on the wire carries `Proxy-Authorization`.
    private var sentAuthorization = false
    /// Succeeds when the proxy answered 2xx; fails with the reason otherwise.
    let established: EventLoopPromise<Void>
    /// Whether bytes after the answer's head go on down the pipeline (else they are an error).
    private let passesLeftover: Bool
    /// Fields the CONNECT carries besides Host and Proxy-Authorization.
    private let headerFields: HeaderFields

    /// A handler for a tunnel to `host:port` (IPv6 literals without brackets).
    init(
        host: String,
        port: Int,
        eventLoop: any EventLoop,
        passesLeftover: Bool = false,
        authentication: UpstreamProxyAuthentication? = nil,
        headerFields: HeaderFields = [:]
    ) {
        self.headerFields = headerFields
        self.target = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        self.authentication = authentication
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

    private func sendConnect(context: ChannelHandlerContext, authorization: String? = nil) {
        var request = "CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\n"
        for field in headerFields { request += "\(field.name): \(field.value)\r\n" }
        if let authorization = authorization ?? authentication?.preemptiveValue {
            request += "Proxy-Authorization: \(authorization)\r\n"
            sentAuthorization = true
        }
        request += "\r\n"
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: request)), promise: nil)
        context.read()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !done else { return }
        var bytes = unwrapInboundIn(data)
        if skipping > 0 {
            let skipped = min(skipping, bytes.readableBytes)
            bytes.moveReaderIndex(forwardBy: skipped)
            skipping -= skipped
            if skipping == 0 { sendConnect(context: context, authorization: authentication?.preemptiveValue) }
            guard bytes.readableBytes > 0 else { return }
        }
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
        if status == 407, answerChallenge(head: head, headEnd: end.upperBound, buffer: buffer, context: context) { return }
        guard (200..<300).contains(status) else {
            let refused = status == 407 && sentAuthorization ? " (the upstream-proxy-credentials were not accepted)" : ""
            finish(context: context, failure: "the upstream proxy refused CONNECT \(target): \(statusLine)\(refused)", status: status)
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

    /// A 407 the session can answer: sends the CONNECT again with the credential (now, or once the
    /// 407's body was skipped), or fails with ``RetryWithCredential`` when the proxy closes.
    /// Returns false when it cannot be answered (no credential, sent already, no Basic offered).
    private func answerChallenge(head: String, headEnd: Int, buffer: ByteBuffer, context: ChannelHandlerContext) -> Bool {
        guard let authentication, !sentAuthorization else { return false }
        var challenges: [String] = []
        var length: Int?
        var closes = head.hasPrefix("HTTP/1.0")
        for line in head.split(separator: "\r\n").dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            switch name {
            case "proxy-authenticate": challenges.append(value)
            case "content-length": length = Int(value)
            case "connection": closes = value.lowercased().contains("close")
            default: break
            }
        }
        guard authentication.answer(challenges: challenges) != nil else { return false }
        guard !closes, let length, !head.lowercased().contains("\r\ntransfer-encoding:") else {
            done = true
            established.fail(RetryWithCredential())
            context.close(promise: nil)
            return true
        }
        // What followed the head in this read belongs to the 407's body (nothing else may come
        // before the next CONNECT is answered).
        let after = buffer.readableBytes - (headEnd - buffer.readableBytesView.startIndex)
        received = nil
        skipping = length - min(length, after)
        if skipping == 0 { sendConnect(context: context, authorization: authentication.preemptiveValue) }
        return true
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

    private func finish(context: ChannelHandlerContext, failure: String, status: Int? = nil) {
        guard !done else { return }
        done = true
        var error = SessionError(.cannotConnectToHost, nil, failure)
        error.proxyAnswer = status == 508 ? .loopDetected : .answered
        established.fail(error)
        context.close(promise: nil)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        if !done {
            done = true
            established.fail(SessionError(.cannotConnectToHost, nil, "the tunnel through the upstream proxy was abandoned"))
        }
    }
}
