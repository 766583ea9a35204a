import NIOCore
import NIOPosix
import NIOWebSocket
import TollgateHTTP
import TollgateLoop
import TollgateTLS

/// Runs one request/response exchange at a time on an origin connection.
///
/// The channel has auto-read off: the handler reads only while the exchange wants bytes
/// (``setReadDemand(_:)``), which is how a suspended task stops reading from the socket.
/// Between exchanges it keeps one read pending so a server's close is noticed at once and the
/// connection is never handed to a new request after the server dropped it.
///
/// It speaks HTTP/1.1 itself: requests go out as ``RequestHeadEncoder`` bytes (bodies chunked
/// when their length is unknown), responses are read by ``ResponseDecoder`` straight into the
/// session's head type.
final class OriginConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = Never
    typealias OutboundOut = ByteBuffer

    private enum State {
        case idle
        case exchanging(Exchange)
        /// A 101 response ended the HTTP part; the connection waits to become a byte stream.
        case upgraded
        case closed
    }

    private struct Exchange {
        var sink: any ExchangeSink
        var requestKeepAlive: Bool
        var chunkedBody: Bool
        var requestFinished = false
        var responseStarted = false
        var responseStatus = 0
        var readDemand = true
    }

    private var state: State = .idle
    private var decoder = ResponseDecoder()
    private var context: ChannelHandlerContext?
    private var readInFlight = false
    /// Bytes of a body file written so far (checked against the declared size).
    private var fileBytesSent: Int64 = 0
    /// The TLS handler below this one, for an https connection.
    var tlsHandler: TLSHandler?
    /// Completed when the TLS handshake is done (with the server's evaluation) or failed.
    var handshake: EventLoopPromise<TLSPeerEvaluation>?
    /// Called once when the channel closes (the pool forgets the connection).
    var onClose: (@Sendable () -> Void)?

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        // Added to a live channel (after a CONNECT through an upstream proxy): no channelActive follows.
        if context.channel.isActive { issueRead() }
    }

    func channelActive(context: ChannelHandlerContext) {
        issueRead()
        context.fireChannelActive()
    }

    /// Starts an exchange: writes the head, streams the body, and reports to `sink`.
    func startExchange(head: RequestHeadEncoder, body: BodySource, sink: any ExchangeSink) {
        guard let context, case .idle = state else {
            sink.exchangeDidFail(SessionError(.networkConnectionLost, nil, "connection closed before the request"), responseStarted: false)
            return
        }
        fileBytesSent = 0
        decoder.requestIsHead = head.isHead
        state = .exchanging(
            Exchange(sink: sink, requestKeepAlive: head.keepAlive, chunkedBody: head.framing == .chunked)
        )
        let headBytes = head.bytes.readableBytes
        context.write(wrapOutboundOut(head.bytes), promise: nil)
        sink.exchangeDidWriteRequestHead(bytes: headBytes)
        writeBody(body, context: context, sink: sink)
        issueRead()
    }

    /// Turns reading on or off for the running exchange (back-pressure).
    func setReadDemand(_ demand: Bool) {
        guard case .exchanging(var exchange) = state else { return }
        exchange.readDemand = demand
        state = .exchanging(exchange)
        if demand { issueRead() }
    }

    /// Closes the connection (cancel, timeout, or a connection that must not be reused).
    func close() {
        context?.close(promise: nil)
    }

    private func issueRead() {
        guard let context, !readInFlight, context.channel.isActive else { return }
        switch state {
        case .exchanging(let exchange) where !exchange.readDemand: return
        case .closed: return
        default: break
        }
        readInFlight = true
        context.read()
    }

    /// After a 101: replaces this handler by a byte-stream handler, which also receives the bytes
    /// the server sent right after the 101. With `midResponse` (becomeStream of another response,
    /// whose body is not chunked), also during or after a response: `first` (the body bytes the
    /// task holds) comes first, then what the decoder had not parsed, then the socket's bytes.
    func convertToStream(
        context: ChannelHandlerContext,
        midResponse: Bool = false,
        first: ByteBuffer = ByteBuffer()
    ) throws -> StreamConnectionHandler {
        let stream = StreamConnectionHandler()
        stream.prepend(first)
        try leavePipeline(context: context, for: [stream], halfClosure: true, midResponse: midResponse) { stream.prepend($0) }
        return stream
    }

    /// ``convertToStream(context:midResponse:first:)`` from outside the pipeline (on the channel's
    /// event loop).
    func convertToStream(midResponse: Bool = false, first: ByteBuffer = ByteBuffer()) throws -> StreamConnectionHandler {
        guard let context else { throw SessionError(.networkConnectionLost, nil, "the connection is gone") }
        return try convertToStream(context: context, midResponse: midResponse, first: first)
    }

    /// After a 101 to a WebSocket handshake: NIOWebSocket's frame decoder and encoder and a
    /// ``WebSocketFrameHandler`` replace this handler; the bytes the server sent right after the
    /// 101 go through the decoder (the frame handler holds their frames until its task attaches).
    func convertToWebSocket(maxFrameSize: Int, compression: PerMessageDeflate?) throws -> WebSocketFrameHandler {
        guard let context else { throw SessionError(.networkConnectionLost, nil, "the connection is gone") }
        let frames = WebSocketFrameHandler()
        var handlers: [any ChannelHandler] = [ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: maxFrameSize)), WebSocketFrameEncoder()]
        if let compression {
            guard let deflate = PerMessageDeflateHandler(compression, maximumMessageSize: maxFrameSize) else {
                throw SessionError(.badServerResponse, nil, "zlib could not make the permessage-deflate streams")
            }
            handlers.append(deflate)
        }
        handlers.append(frames)
        try leavePipeline(context: context, for: handlers, halfClosure: false) { leftover in
            if leftover.readableBytes > 0 { context.fireChannelRead(NIOAny(leftover)) }
        }
        return frames
    }

    /// Puts `handlers` behind this one, gives them what the decoder read past the 101, and leaves.
    /// `halfClosure`: the peer's EOF is a half-close (a byte stream) rather than the end.
    private func leavePipeline(
        context: ChannelHandlerContext,
        for handlers: [any ChannelHandler],
        halfClosure: Bool,
        midResponse: Bool = false,
        leftover: (ByteBuffer) -> Void
    ) throws {
        switch state {
        case .upgraded, .exchanging: break
        case .idle where midResponse: break
        default: throw SessionError(.badServerResponse, nil, "the connection was not upgraded")
        }
        state = .closed
        onClose = nil
        let pipeline = context.pipeline.syncOperations
        try pipeline.addHandlers(handlers)
        leftover(decoder.takeRemainingBytes())
        pipeline.removeHandler(context: context, promise: nil)
        if halfClosure { context.channel.setOption(.allowRemoteHalfClosure, value: true).whenComplete { _ in } }
    }

    // MARK: body

    private func writeBody(_ body: BodySource, context: ChannelHandlerContext, sink: any ExchangeSink) {
        switch body {
        case .none:
            finishRequest(context: context, sink: sink)
        case .bytes(let buffer):
            writeBodyPiece(buffer, context: context, promise: nil)
            sink.exchangeDidWriteBody(bytes: buffer.readableBytes)
            finishRequest(context: context, sink: sink)
        case .file(let path, let size, let fileIO):
            let loop = context.eventLoop
            do {
                let handle = try NIOFileHandle(_deprecatedPath: path)
                let future = fileIO.readChunked(
                    fileHandle: handle, byteCount: Int(size), chunkSize: 64 * 1024,
                    allocator: context.channel.allocator, eventLoop: loop
                ) { [weak self] (chunk: ByteBuffer) -> EventLoopFuture<Void> in
                    guard let self, let context = self.context, self.isExchanging(sink) else {
                        return loop.makeFailedFuture(SessionError(.cancelled))
                    }
                    let count = chunk.readableBytes
                    self.fileBytesSent += Int64(count)
                    let written = loop.makePromise(of: Void.self)
                    self.writeBodyPiece(chunk, context: context, promise: written)
                    context.flush()
                    return written.futureResult.map { sink.exchangeDidWriteBody(bytes: count) }
                }
                future.whenComplete { [weak self] (result: Result<Void, any Error>) in
                    try? handle.close()
                    guard let self, let context = self.context, self.isExchanging(sink) else { return }
                    switch result {
                    case .success where self.fileBytesSent != size:
                        // The file shrank while it was sent: the declared length cannot be met.
                        self.failExchange(SessionError(.requestBodyStreamExhausted, nil, "the body file changed size while it was sent"))
                    case .success: self.finishRequest(context: context, sink: sink)
                    case .failure(let error): self.failExchange(SessionError(.networkConnectionLost, nil, "reading the body file: \(error)"))
                    }
                }
            } catch {
                failExchange(SessionError(.requestBodyStreamExhausted, nil, "cannot open body file \(path): \(error)"))
            }
        case .stream(let stream):
            pumpStream(stream, context: context, sink: sink)
        }
    }

    private func pumpStream(_ stream: BodyStream, context: ChannelHandlerContext, sink: any ExchangeSink) {
        stream.read(on: context.eventLoop).whenComplete { [weak self] result in
            guard let self, let context = self.context, self.isExchanging(sink) else {
                stream.close()
                return
            }
            switch result {
            case .success(.some(let piece)):
                let count = piece.readableBytes
                let written = context.eventLoop.makePromise(of: Void.self)
                self.writeBodyPiece(piece, context: context, promise: written)
                context.flush()
                written.futureResult.whenSuccess { [weak self] in
                    sink.exchangeDidWriteBody(bytes: count)
                    guard let self, let context = self.context else { return }
                    self.pumpStream(stream, context: context, sink: sink)
                }
            case .success(.none):
                self.finishRequest(context: context, sink: sink)
            case .failure(let error):
                self.failExchange(SessionError(.requestBodyStreamExhausted, nil, "the body stream failed: \(error)"))
            }
        }
    }

    /// Writes one piece of the request body, as a chunk when the body is chunked.
    private func writeBodyPiece(_ piece: ByteBuffer, context: ChannelHandlerContext, promise: EventLoopPromise<Void>?) {
        guard case .exchanging(let exchange) = state, exchange.chunkedBody else {
            context.write(wrapOutboundOut(piece), promise: promise)
            return
        }
        guard piece.readableBytes > 0 else {
            promise?.succeed(())  // an empty chunk would end the body
            return
        }
        var sizeLine = context.channel.allocator.buffer(capacity: 18)
        sizeLine.writeString(String(piece.readableBytes, radix: 16))
        sizeLine.writeStaticString("\r\n")
        context.write(wrapOutboundOut(sizeLine), promise: nil)
        context.write(wrapOutboundOut(piece), promise: nil)
        var lineEnd = context.channel.allocator.buffer(capacity: 2)
        lineEnd.writeStaticString("\r\n")
        context.write(wrapOutboundOut(lineEnd), promise: promise)
    }

    private func finishRequest(context: ChannelHandlerContext, sink: any ExchangeSink) {
        guard case .exchanging(let exchange) = state else { return }
        if exchange.chunkedBody {
            var last = context.channel.allocator.buffer(capacity: 5)
            last.writeStaticString("0\r\n\r\n")
            context.write(wrapOutboundOut(last), promise: nil)
        }
        // Plain TCP: when the flush leaves nothing buffered in the channel, the whole request is in
        // the kernel now — the usual case, known without a promise, a future and a callback.
        // (Through TLS the bytes may wait in the TLS handler, which the channel does not count.)
        if tlsHandler == nil {
            context.flush()
            if let buffered = try? context.channel.syncOptions?.getOption(.bufferedWritableBytes), buffered == 0 {
                requestWritten(sink)
                return
            }
        }
        // Otherwise an empty last write carries a promise: writes complete in order, so when it
        // completes the whole request has reached the socket.
        let promise = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(ByteBuffer()), promise: promise)
        promise.futureResult.whenComplete { [weak self] result in
            guard let self, case .success = result else { return }
            self.requestWritten(sink)
        }
    }

    private func requestWritten(_ sink: any ExchangeSink) {
        guard case .exchanging(var exchange) = state, exchange.sink === sink else { return }
        exchange.requestFinished = true
        state = .exchanging(exchange)
        sink.exchangeDidFinishRequest()
    }

    private func isExchanging(_ sink: any ExchangeSink) -> Bool {
        if case .exchanging(let exchange) = state { return exchange.sink === sink }
        return false
    }

    // MARK: inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .exchanging = state else {
            // Bytes with no request outstanding: the server is misbehaving; never reuse it.
            context.close(promise: nil)
            return
        }
        decoder.feed(unwrapInboundIn(data))
        // One event: the response's steps (metrics, timeouts, the pool) share one clock reading.
        TickClock.begin()
        defer { TickClock.end() }
        decodeResponse(context: context)
    }

    /// Hands what the decoder makes of the bytes so far to the exchange. The sink's calls may
    /// end the exchange (cancel, close) or, after the end, start the next one on this connection:
    /// the state is read afresh for each event.
    private func decodeResponse(context: ChannelHandlerContext) {
        while case .exchanging(var exchange) = state {
            let event: ResponseDecoder.Event?
            do {
                event = try decoder.next()
            } catch {
                failExchange(SessionError(.badServerResponse, nil, "invalid HTTP response: \(error.message)"))
                context.close(promise: nil)
                return
            }
            guard let event else { return }
            deliver(event, of: &exchange, context: context)
        }
    }

    private func deliver(_ event: ResponseDecoder.Event, of exchange: inout Exchange, context: ChannelHandlerContext) {
        switch event {
        case .head(let head):
            exchange.responseStarted = true
            exchange.responseStatus = head.status
            state = .exchanging(exchange)
            exchange.sink.exchangeDidReceiveHead(head)
        case .interim(let head):
            exchange.sink.exchangeDidReceiveInterim(head)
        case .body(let buffer):
            exchange.sink.exchangeDidReceiveBody(buffer)
        case .end(let framedForReuse):
            if exchange.responseStatus == 101 {
                state = .upgraded
                exchange.sink.exchangeDidReceiveEnd(reusable: false)
                return
            }
            // Bytes beyond the response: the server sent more than it was asked for.
            let reusable = framedForReuse && exchange.requestFinished && exchange.requestKeepAlive
                && decoder.bufferedBytes == 0
            state = .idle
            exchange.sink.exchangeDidReceiveEnd(reusable: reusable)
            if !reusable { context.close(promise: nil) }
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        readInFlight = false
        issueRead()
        context.fireChannelReadComplete()
    }

    func read(context: ChannelHandlerContext) {
        // Reads are issued by this handler alone; a read from elsewhere in the pipeline is ignored.
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let completed = event as? TLSHandshakeCompleted {
            handshake?.succeed(completed.evaluation)
            handshake = nil
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// Lets application data flow after the session accepted the server's trust.
    func approvePeer() {
        tlsHandler?.approvePeer()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let handshake {
            self.handshake = nil
            handshake.fail(SessionError(.secureConnectionFailed, nil, "TLS handshake: \(error)"))
            context.close(promise: nil)
            return
        }
        let sessionError: SessionError
        if let tlsError = error as? TLSError, tlsError == .alertReceived,
            tlsError.alert?.lowercased().contains("certificate required") == true
        {
            // TLS 1.3: the client's handshake is over before the server checks for a certificate,
            // so a server that requires one says so with this alert on the first read.
            sessionError = SessionError(
                .clientCertificateRequired, nil, "the server requires a client certificate (\(tlsError))"
            )
        } else {
            sessionError = SessionError(.networkConnectionLost, nil, "\(error)")
        }
        failExchange(sessionError)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let handshake {
            self.handshake = nil
            handshake.fail(SessionError(.secureConnectionFailed, nil, "the server closed the connection during the TLS handshake"))
        }
        if case .exchanging(var exchange) = state {
            do {
                // The end of a body that runs to the close; nothing when no response had begun.
                if let event = try decoder.inputEnded() { deliver(event, of: &exchange, context: context) }
            } catch {
                failExchange(SessionError(.networkConnectionLost, nil, error.message))
            }
        }
        failExchange(SessionError(.networkConnectionLost, nil, "the server closed the connection"))
        state = .closed
        onClose?()
        onClose = nil
        context.fireChannelInactive()
    }

    private func failExchange(_ error: SessionError) {
        guard case .exchanging(let exchange) = state else { return }
        state = .closed
        exchange.sink.exchangeDidFail(error, responseStarted: exchange.responseStarted)
        context?.close(promise: nil)
    }
}
