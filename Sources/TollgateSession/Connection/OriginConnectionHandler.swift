import NIOCore
import NIOHTTP1
import NIOPosix
import TollgateTLS

/// Runs one request/response exchange at a time on an origin connection.
///
/// The channel has auto-read off: the handler reads only while the exchange wants bytes
/// (``setReadDemand(_:)``), which is how a suspended task stops reading from the socket.
/// Between exchanges it keeps one read pending so a server's close is noticed at once and the
/// connection is never handed to a new request after the server dropped it.
final class OriginConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler, @unchecked Sendable {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = Never
    typealias OutboundOut = HTTPClientRequestPart

    private enum State {
        case idle
        case exchanging(Exchange)
        /// A 101 response ended the HTTP part; the connection waits to become a byte stream.
        case upgraded
        case closed
    }

    private struct Exchange {
        var sink: any ExchangeSink
        var isHead: Bool
        var requestKeepAlive: Bool
        var requestFinished = false
        var responseStarted = false
        var responseHead: HTTPResponseHead?
        var readDemand = true
    }

    private var state: State = .idle
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
    func startExchange(head: HTTPRequestHead, body: BodySource, sink: any ExchangeSink) {
        guard let context, case .idle = state else {
            sink.exchangeDidFail(SessionError(.networkConnectionLost, nil, "connection closed before the request"), responseStarted: false)
            return
        }
        fileBytesSent = 0
        state = .exchanging(
            Exchange(sink: sink, isHead: head.method == .HEAD, requestKeepAlive: head.isKeepAlive)
        )
        let headBytes = head.uri.utf8.count + head.method.rawValue.utf8.count + 12
            + head.headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 4 }
        context.write(wrapOutboundOut(.head(head)), promise: nil)
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

    /// After a 101: replaces the HTTP handlers by a byte-stream handler, which also receives the
    /// bytes the server sent right after the 101 (the decoder forwards them when removed).
    func convertToStream(context: ChannelHandlerContext) throws -> StreamConnectionHandler {
        guard case .upgraded = state else {
            throw SessionError(.badServerResponse, nil, "the connection was not upgraded")
        }
        state = .closed
        onClose = nil
        let pipeline = context.pipeline.syncOperations
        let stream = StreamConnectionHandler()
        try pipeline.addHandler(stream)
        let encoder = try pipeline.handler(type: HTTPRequestEncoder.self)
        let decoder = try pipeline.handler(type: ByteToMessageHandler<HTTPResponseDecoder>.self)
        // This handler leaves first: the decoder forwards the bytes that followed the 101 as it is
        // removed, and they must reach the stream handler, not this one.
        pipeline.removeHandler(context: context, promise: nil)
        pipeline.removeHandler(encoder, promise: nil)
        pipeline.removeHandler(decoder, promise: nil)
        context.channel.setOption(.allowRemoteHalfClosure, value: true).whenComplete { _ in }
        return stream
    }

    /// ``convertToStream(context:)`` from outside the pipeline (on the channel's event loop).
    func convertToStream() throws -> StreamConnectionHandler {
        guard let context else { throw SessionError(.networkConnectionLost, nil, "the connection is gone") }
        return try convertToStream(context: context)
    }

    // MARK: body

    private func writeBody(_ body: BodySource, context: ChannelHandlerContext, sink: any ExchangeSink) {
        switch body {
        case .none:
            finishRequest(context: context, sink: sink)
        case .bytes(let buffer):
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
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
                    return context.writeAndFlush(self.wrapOutboundOut(.body(.byteBuffer(chunk)))).map {
                        sink.exchangeDidWriteBody(bytes: count)
                    }
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
                context.writeAndFlush(self.wrapOutboundOut(.body(.byteBuffer(piece)))).whenSuccess { [weak self] in
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

    private func finishRequest(context: ChannelHandlerContext, sink: any ExchangeSink) {
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { [weak self] result in
            guard let self, self.isExchanging(sink) else { return }
            if case .success = result {
                guard case .exchanging(var exchange) = self.state else { return }
                exchange.requestFinished = true
                self.state = .exchanging(exchange)
                sink.exchangeDidFinishRequest()
            }
        }
    }

    private func isExchanging(_ sink: any ExchangeSink) -> Bool {
        if case .exchanging(let exchange) = state { return exchange.sink === sink }
        return false
    }

    // MARK: inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        guard case .exchanging(var exchange) = state else {
            // Bytes with no request outstanding: the server is misbehaving; never reuse it.
            context.close(promise: nil)
            return
        }
        switch part {
        case .head(let head):
            if (100..<200).contains(head.status.code) && head.status.code != 101 {
                return  // interim responses (100 Continue, 103) are not the response
            }
            exchange.responseStarted = true
            exchange.responseHead = head
            state = .exchanging(exchange)
            exchange.sink.exchangeDidReceiveHead(head)
        case .body(let buffer):
            exchange.sink.exchangeDidReceiveBody(buffer)
        case .end:
            let head = exchange.responseHead
            if head?.status.code == 101 {
                state = .upgraded
                exchange.sink.exchangeDidReceiveEnd(reusable: false)
                return
            }
            let reusable = exchange.requestFinished && exchange.requestKeepAlive && (head?.isKeepAlive ?? false)
                && head?.status.code != 101
                && (head.map { Self.hasSelfDelimitedBody($0, isHead: exchange.isHead) } ?? false)
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
        if let parserError = error as? HTTPParserError, parserError == .invalidEOFState {
            // The parser saw EOF inside a message: the connection died mid-response.
            sessionError = SessionError(.networkConnectionLost, nil, "the connection closed before the response was complete")
        } else if error is HTTPParserError {
            sessionError = SessionError(.badServerResponse, nil, "invalid HTTP response: \(error)")
        } else if let tlsError = error as? TLSError, tlsError == .alertReceived,
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

    /// Whether the response's end was marked by framing (not by closing the connection).
    private static func hasSelfDelimitedBody(_ head: HTTPResponseHead, isHead: Bool) -> Bool {
        if isHead || head.status.code == 204 || head.status.code == 304 || head.status.code < 200 { return true }
        if head.headers.contains(name: "content-length") { return true }
        return head.headers[canonicalForm: "transfer-encoding"].last?.lowercased() == "chunked"
    }
}
