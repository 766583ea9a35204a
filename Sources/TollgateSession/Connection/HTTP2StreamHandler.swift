import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import TollgateHTTP

/// Runs one exchange on one HTTP/2 stream and reports it to the task's ``ExchangeSink``, as
/// ``OriginConnectionHandler`` does on HTTP/1.1: the request head goes out as HEADERS, its body as
/// DATA; the response's HEADERS become the head (1xx ones interim), its DATA the body, END_STREAM
/// the end; RST_STREAM, a GOAWAY that refused the stream, or the connection's close fail it.
///
/// The stream channel has auto-read off: it reads only while the task wants bytes
/// (``setReadDemand(_:)``). Frames it does not read stay unacknowledged, so the server's window for
/// this stream closes (no WINDOW_UPDATE) and a suspended task holds back its stream alone.
final class HTTP2StreamHandler: ChannelDuplexHandler, @unchecked Sendable {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundIn = Never
    typealias OutboundOut = HTTP2Frame.FramePayload

    private let head: HTTPRequestHead
    private let body: BodySource
    private let sink: any ExchangeSink
    private var context: ChannelHandlerContext?
    private var state = HTTP2StreamExchangeState()
    private var readDemand = true
    private var readPending = false
    /// Whether the request's last frame (END_STREAM) was written.
    private var requestSent = false

    /// The connection, asked whether its GOAWAY refused this stream (nil in tests).
    private let connection: HTTP2OriginConnection?

    init(head: HTTPRequestHead, body: BodySource, sink: any ExchangeSink, connection: HTTP2OriginConnection? = nil) {
        self.head = head
        self.body = body
        self.sink = sink
        self.connection = connection
    }

    // MARK: the task's side

    /// Turns reading on or off (back-pressure).
    func setReadDemand(_ demand: Bool) {
        readDemand = demand
        if demand { issueRead() }
    }

    /// Resets the stream (the task is cancelled): RST_STREAM CANCEL, the connection goes on.
    func close() {
        state.finish()
        context?.close(promise: nil)
    }

    /// The stream could not be opened (the connection is gone or has no room).
    func streamFailed(_ error: SessionError) {
        fail(error)
    }

    // MARK: request

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { sendRequest(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        sendRequest(context: context)
        context.fireChannelActive()
    }

    private func sendRequest(context: ChannelHandlerContext) {
        guard state.startRequest() else { return }
        let headers = HTTP2Heads.requestHeaders(head)
        let noBody: Bool
        if case .none = body { noBody = true } else { noBody = false }
        let headWritten = context.eventLoop.makePromise(of: Void.self)
        context.write(wrapOutboundOut(.headers(.init(headers: headers, endStream: noBody))), promise: headWritten)
        headWritten.futureResult.whenFailure { [weak self] error in
            // NIOHTTP2 refused the HEADERS (the connection is going away): nothing left for the
            // server, so the request was not processed.
            var lost = Self.sessionError(for: error)
            if error is any NIOHTTP2Error { lost.notProcessed = true }
            self?.fail(lost)
        }
        sink.exchangeDidWriteRequestHead(bytes: HTTP2Heads.size(of: headers))
        switch body {
        case .none:
            finishRequest(context: context, last: nil)
        case .bytes(let buffer):
            sink.exchangeDidWriteBody(bytes: buffer.readableBytes)
            finishRequest(context: context, last: buffer)
        case .file(let path, let size, let fileIO):
            sendFile(path: path, size: size, fileIO: fileIO, context: context)
        case .stream(let stream):
            context.flush()
            pump(stream, context: context)
        }
        issueRead()
    }

    /// Writes the last DATA frame (END_STREAM) and reports the request sent once it is written.
    private func finishRequest(context: ChannelHandlerContext, last: ByteBuffer?) {
        let promise = context.eventLoop.makePromise(of: Void.self)
        if let last {
            context.writeAndFlush(wrapOutboundOut(.data(.init(data: .byteBuffer(last), endStream: true))), promise: promise)
        } else if case .none = body {
            context.flush()
            promise.succeed(())
        } else {
            context.writeAndFlush(wrapOutboundOut(.data(.init(data: .byteBuffer(ByteBuffer()), endStream: true))), promise: promise)
        }
        promise.futureResult.whenSuccess { [weak self] in
            guard let self else { return }
            self.requestSent = true
            guard self.state.isRunning else { return }
            self.sink.exchangeDidFinishRequest()
        }
    }

    /// Writes one body piece; `written` completes when NIOHTTP2 has passed it on (within the
    /// server's flow-control window).
    private func writePiece(_ piece: ByteBuffer, context: ChannelHandlerContext) -> EventLoopFuture<Void> {
        let written = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(.data(.init(data: .byteBuffer(piece)))), promise: written)
        return written.futureResult
    }

    private func sendFile(path: String, size: Int64, fileIO: NonBlockingFileIO, context: ChannelHandlerContext) {
        let loop = context.eventLoop
        let handle: NIOFileHandle
        do {
            handle = try NIOFileHandle(_deprecatedPath: path)
        } catch {
            fail(SessionError(.requestBodyStreamExhausted, nil, "cannot open body file \(path): \(error)"))
            return
        }
        // Both closures run on the loop: the count is loop-bound.
        let sent = NIOLoopBoundBox(Int64(0), eventLoop: loop)
        fileIO.readChunked(
            fileHandle: handle, byteCount: Int(size), chunkSize: 64 * 1024,
            allocator: context.channel.allocator, eventLoop: loop
        ) { [weak self] chunk in
            guard let self, let context = self.context, self.state.isRunning else {
                return loop.makeFailedFuture(SessionError(.cancelled))
            }
            let count = chunk.readableBytes
            sent.value += Int64(count)
            return self.writePiece(chunk, context: context).map { self.sink.exchangeDidWriteBody(bytes: count) }
        }.whenComplete { [weak self] result in
            try? handle.close()
            guard let self, let context = self.context, self.state.isRunning else { return }
            switch result {
            case .success where sent.value != size:
                self.fail(SessionError(.requestBodyStreamExhausted, nil, "the body file changed size while it was sent"))
            case .success: self.finishRequest(context: context, last: nil)
            case .failure(let error): self.fail(SessionError(.networkConnectionLost, nil, "reading the body file: \(error)"))
            }
        }
    }

    private func pump(_ stream: BodyStream, context: ChannelHandlerContext) {
        stream.read(on: context.eventLoop).whenComplete { [weak self] result in
            guard let self, let context = self.context, self.state.isRunning else {
                stream.close()
                return
            }
            switch result {
            case .success(.some(let piece)):
                let count = piece.readableBytes
                self.writePiece(piece, context: context).whenSuccess { [weak self] in
                    guard let self, let context = self.context else { return }
                    self.sink.exchangeDidWriteBody(bytes: count)
                    self.pump(stream, context: context)
                }
            case .success(.none):
                self.finishRequest(context: context, last: nil)
            case .failure(let error):
                self.fail(SessionError(.requestBodyStreamExhausted, nil, "the body stream failed: \(error)"))
            }
        }
    }

    // MARK: response

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let event = state.received(unwrapInboundIn(data))
        switch event {
        case .interim(let head): sink.exchangeDidReceiveInterim(head)
        case .head(let head, let ended):
            sink.exchangeDidReceiveHead(head)
            if ended { end() }
        case .body(let buffer, let ended):
            if buffer.readableBytes > 0 { sink.exchangeDidReceiveBody(buffer) }
            if ended { end() }
        case .end: end()
        case .failed(let error):
            // The state is already over: reported here, not through fail().
            sink.exchangeDidFail(error, responseStarted: state.responseStarted)
            context.close(promise: nil)
        case .ignored: break
        }
    }

    private func end() {
        // The exchange is over; the connection's own state (open, GOAWAY) decides its reuse.
        sink.exchangeDidReceiveEnd(reusable: true)
        // A response that ended before the request body did (RFC 9113 §8.1): the rest is not sent,
        // and the stream is reset rather than left half-open, holding one of the server's streams.
        if !requestSent { context?.close(promise: nil) }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        readPending = false
        issueRead()
        context.fireChannelReadComplete()
    }

    private func issueRead() {
        guard readDemand, !readPending, state.isRunning, let context, context.channel.isActive else { return }
        readPending = true
        context.read()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(Self.sessionError(for: error))
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(SessionError(.networkConnectionLost, nil, "the HTTP/2 stream closed before the response ended"))
        self.context = nil
        context.fireChannelInactive()
    }

    private func fail(_ error: SessionError) {
        guard state.isRunning else { return }
        let responseStarted = state.responseStarted
        var error = error
        // A stream above the last stream id of the server's GOAWAY (NIOHTTP2 closes it with
        // CANCEL): refused, not processed.
        if error.code == .networkConnectionLost, !error.notProcessed, !responseStarted, let context,
            HTTP2StreamExchangeState.refusedByGoAway(
                stream: try? context.channel.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID),
                lastStreamID: connection?.goAwayLastStreamID
            )
        {
            error = SessionError(.networkConnectionLost, nil, "the server's GOAWAY refused the HTTP/2 stream (above its last stream id): not processed")
            error.notProcessed = true
        }
        state.finish()
        sink.exchangeDidFail(error, responseStarted: responseStarted)
        context?.close(promise: nil)
    }

    /// NIOHTTP2's errors as the session's, `networkConnectionLost`; marked not processed (which a
    /// task may send again whatever its method, RFC 9113 §8.7) for a stream the server reset with
    /// REFUSED_STREAM and one opened after the server's GOAWAY (never sent). A stream above a
    /// GOAWAY's last stream id, which NIOHTTP2 closes with CANCEL, is recognised in `fail`.
    static func sessionError(for error: any Error) -> SessionError {
        if let closed = error as? NIOHTTP2Errors.StreamClosed {
            return HTTP2StreamExchangeState.resetError(closed.errorCode)
        }
        var lost = SessionError(.networkConnectionLost, nil, "HTTP/2: \(error)")
        if error is NIOHTTP2Errors.CreatedStreamAfterGoaway {
            lost.detail = "the server sent GOAWAY before the HTTP/2 stream opened: not processed"
            lost.notProcessed = true
        }
        return lost
    }
}
