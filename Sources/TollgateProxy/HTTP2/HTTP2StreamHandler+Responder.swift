import NIOCore
import NIOHPACK
import NIOHTTP2
import TollgateHTTP

/// What exchanges write through on an HTTP/2 stream: the response head as HEADERS, its body as
/// DATA, its end as END_STREAM; an answer cut short as RST_STREAM(INTERNAL_ERROR), which the
/// client cannot take for a whole response. Request body pieces are paced by holding reads.
extension HTTP2StreamHandler: ClientResponder {
    var isActive: Bool { machine.isServing && (context?.channel.isActive ?? false) }

    var isWritable: Bool { context?.channel.isWritable ?? false }

    /// Never: a file region cannot go through HTTP/2 framing (no `sendfile`); a stored body is
    /// read into buffers.
    var acceptsFileRegion: Bool { false }

    func sendInterim(_ head: HTTPResponseHead) {
        guard let context, isActive else { return }
        if head.status >= 200 || (head.status == 101 && machine.tunnel != nil) {
            // A tunnel's 200 (RFC 9113 §8.5), or the 101 of an extended CONNECT's WebSocket
            // upgrade, which is a 200 on a stream (RFC 8441 §5; no Sec-WebSocket-Accept): the
            // response head, without END_STREAM; the tunnel's bytes follow as DATA.
            guard machine.tunnel != nil else { return }
            machine.responseHeadSent()
            var fields = head.headerFields
            fields.remove("sec-websocket-accept")
            let tunnelHead = HTTPResponseHead(status: 200, headerFields: fields)
            write(.headers(.init(headers: HTTP2ResponseFields.block(tunnelHead))), context: context, flush: true)
            return
        }
        // 101 has no meaning on a stream (RFC 9113 §8.6); upgrades are refused before any.
        guard head.status != 101 else { return }
        write(.headers(.init(headers: HTTP2ResponseFields.block(head))), context: context, flush: true)
    }

    func takeAddedFields() -> HeaderFields { HeaderFields() }

    func sendHead(
        _ head: HTTPResponseHead,
        adding added: inout HeaderFields,
        omitting omission: HopByHopHeaders.Omission?,
        framing: ResponseFraming,
        bodyLength: Int64?,
        close: Bool
    ) {
        guard let context, isActive else { return }
        if machine.tunnel != nil, (200..<300).contains(head.status) {
            // An extended CONNECT's origin answered 2xx without switching to WebSocket: passed on,
            // it would read as the WebSocket's success (RFC 8441 §5).
            abort()
            return
        }
        machine.responseHeadSent()
        let endStream = framing == .none
        endStreamSent = endStream
        // Flushed with the first body piece, or now when no body follows.
        write(
            .headers(.init(headers: HTTP2ResponseFields.block(head, adding: added), endStream: endStream)),
            context: context,
            flush: endStream
        )
    }

    /// Flushed at once: the stream's writability then says whether the client's window takes
    /// more, which is what suspends the task (back-pressure).
    func sendBody(_ piece: ByteBuffer) {
        guard let context, isActive, !endStreamSent, piece.readableBytes > 0 else { return }
        write(.data(.init(data: .byteBuffer(piece))), context: context, flush: true)
    }

    func sendFile(_ region: FileRegion) -> EventLoopFuture<Void>? { nil }

    func sendEnd() {
        guard let context, isActive else { return }
        if !endStreamSent {
            endStreamSent = true
            write(.data(.init(data: .byteBuffer(ByteBuffer()), endStream: true)), context: context, flush: true)
        } else {
            context.flush()
        }
        responseEnded()
    }

    func sendOwnAnswer(_ answer: OwnResponse, close: Bool) {
        guard let context, isActive else { return }
        machine.responseHeadSent()
        // `close` has no meaning for one stream: the connection's other streams go on.
        let head = answer.head(minorVersion: 1, close: false)
        endStreamSent = true
        write(.headers(.init(headers: HTTP2ResponseFields.block(head))), context: context, flush: false)
        let end = context.writeAndFlush(wrapOutboundOut(.data(.init(data: .byteBuffer(answer.body), endStream: true))))
        endStreamWrite = end
        responseEnded()
    }

    /// Resets the stream: a response that cannot be completed must not look complete.
    func abort() {
        exchange = nil
        reset(.internalError)
    }

    func trackBodyPiece(_ taken: EventLoopFuture<Void>) {
        guard let context else { return }
        machine.bodyPieceSent()
        watchBody()
        taken.hop(to: context.eventLoop).assumeIsolated().whenComplete { [self] _ in
            if machine.bodyPieceTaken() { self.context?.read() }
            watchBody()
        }
    }

    func holdReads() {
        machine.readsWereHeld()
        watchBody()
    }

    func releaseReads() {
        if machine.readsWereReleased() { context?.read() }
        watchBody()
    }

    // MARK: helpers

    private func write(_ payload: HTTP2Frame.FramePayload, context: ChannelHandlerContext, flush: Bool) {
        if flush {
            context.writeAndFlush(wrapOutboundOut(payload), promise: nil)
        } else {
            context.write(wrapOutboundOut(payload), promise: nil)
        }
    }

    /// The response ended: the stream closes by itself once the request has ended too; a client
    /// still sending a body is asked to stop.
    private func responseEnded() {
        exchange = nil
        defer { watchBody() }
        switch machine.responseEnded() {
        case .none:
            break
        case .resetNoError:
            // The RST_STREAM waits for the answer's END_STREAM to be written: sent at once, it
            // overtook the DATA still held in NIO's flow-control buffer (written inside the read
            // of the request's HEADERS, e.g. a refused CONNECT's 403), which the reset discarded;
            // the stream closes once the reset is out.
            guard let context else { return }
            let channel = context.channel
            let reset = HTTP2Frame.FramePayload.rstStream(.noError)
            let after = endStreamWrite ?? context.eventLoop.makeSucceededVoidFuture()
            endStreamWrite = nil
            after.whenComplete { _ in
                channel.writeAndFlush(reset).whenComplete { _ in channel.close(promise: nil) }
            }
        }
    }
}
