import NIOCore
import TollgateSession

/// Carries bytes between a client connection and a stream task (a CONNECT tunnel, or an
/// upgraded connection after a 101), both ways, with half-close and back-pressure.
///
/// A WebSocket upgrade (`webSocket` limits given) is read frame by frame both ways as it passes
/// (``WebSocketRelayFrames``): messages and bytes are counted, and a message over the limit,
/// or no frame either way for the idle timeout, closes both sides with a close frame of the
/// proxy's own (1009, 1001) where that side's stream is at a frame boundary. The bytes that
/// pass are not changed. Any other relay (a tunnel, another upgrade) with no byte either way for
/// its idle timeout (`limits.tunnel-idle-timeout`) ends: both connections are closed.
///
/// - client → upstream: each piece is written to the stream task; the client is not read again
///   until that write completes. The client's EOF becomes ``StreamTask/closeWrite()`` once every
///   piece before it is written.
/// - upstream → client: one `readData` at a time; the next read is made only when the client's
///   socket took the bytes of the previous one. The upstream's EOF becomes a half-close of the
///   client connection's output.
///
/// The relay ends when both directions have closed, when either side fails, or when the client
/// goes away; the client connection is then closed and the stream task cancelled if it still runs.
/// It is the stream task's delegate (`readClosed`, `writeClosed`, completion).
///
/// The upstream is a ``RelayUpstream`` (the stream task, or a test's scripted one); the stream
/// task's delegate calls arrive as ``upstreamWriteSideClosed()`` and ``upstreamCompleted(_:)``.
///
/// Touched only on the client connection's event loop; callbacks from the stream task are moved
/// there first (hence `@unchecked Sendable`).
final class StreamRelay: StreamTaskDelegate, @unchecked Sendable {
    /// Bytes carried each way.
    struct Totals: Sendable {
        var toClient: Int64 = 0
        var toUpstream: Int64 = 0
        /// A WebSocket connection's messages, bytes and close (nil for other relays).
        var webSocket: WebSocketTotals?
        /// How the relay ended (nil while it runs).
        var end: RelayEnd?
    }

    /// The most bytes one read from the upstream hands over.
    static let readSize = 64 * 1024

    private let stream: any RelayUpstream
    private let eventLoop: any EventLoop
    private var connection: (any RelayClientSide)?
    private let onEnd: (Totals, SessionError?) -> Void
    private var totals = Totals()
    private var writesInFlight = 0
    private var clientEOF = false
    private var upstreamWriteClosed = false
    private var upstreamEOF = false
    private var ended = false
    /// The frames of a WebSocket connection both ways (nil: opaque bytes).
    private var frames: WebSocketRelayFrames?
    /// The proxy is closing both sides itself (its close frames are being written).
    private var closingItself = false
    /// No byte (a WebSocket relay: no frame) either way for this long ends the relay (nil: never).
    private let idleTimeout: Duration?
    /// When a byte last passed either way, on the event loop's clock.
    private var lastActivity: NIODeadline
    private var idleCheck: Scheduled<Void>?
    /// - Parameters:
    ///   - webSocket: the limits of a WebSocket upgrade, whose frames are read (nil: opaque bytes).
    ///   - idleTimeout: how long opaque bytes may stop both ways before the relay ends
    ///     (`limits.tunnel-idle-timeout`; nil: no limit). A WebSocket relay has its own.
    init(
        stream: any RelayUpstream,
        connection: any RelayClientSide,
        eventLoop: any EventLoop,
        webSocket: WebSocketRelayLimits? = nil,
        idleTimeout: Duration? = nil,
        onEnd: @escaping (Totals, SessionError?) -> Void
    ) {
        self.stream = stream
        self.connection = connection
        self.eventLoop = eventLoop
        self.idleTimeout = webSocket?.idleTimeout ?? idleTimeout
        self.lastActivity = eventLoop.now
        self.frames = webSocket.map(WebSocketRelayFrames.init)
        self.onEnd = onEnd
    }

    /// Whether the client may be read now.
    var wantsClientBytes: Bool { !ended && writesInFlight == 0 && !clientEOF }

    /// Starts both directions; `initialClientBytes` are what the client sent after its request head.
    func start(initialClientBytes: ByteBuffer, clientInputClosed: Bool) {
        if initialClientBytes.readableBytes > 0 { clientSent(initialClientBytes) }
        if clientInputClosed { self.clientInputClosed() }
        readFromUpstream()
        scheduleIdleCheck()
    }

    // MARK: client → upstream

    /// Bytes from the client.
    func clientSent(_ bytes: ByteBuffer) {
        guard !ended, !clientEOF, !closingItself else { return }
        var bytes = bytes
        var tooBig = false
        lastActivity = eventLoop.now
        if frames != nil {
            switch frames!.fromClient(bytes) {
            case .forward(let passing): bytes = passing
            case .tooBig(let passing): (bytes, tooBig) = (passing, true)
            }
        }
        if bytes.readableBytes > 0 {
            totals.toUpstream += Int64(bytes.readableBytes)
            writesInFlight += 1
            stream.write(bytes, timeout: .zero) { [self] error in
                onLoop { [self] in
                    writesInFlight -= 1
                    if let error {
                        end(.upstreamFailed, error)
                        return
                    }
                    if clientEOF, writesInFlight == 0 { closeUpstreamWrite() }
                    connection?.resumeReadingIfPossible()
                }
            }
        } else {
            // Only part of a WebSocket frame header: held until the rest comes.
            connection?.resumeReadingIfPossible()
        }
        // After the bytes before it: the stream task writes in order.
        if tooBig { closeBothSides(code: 1009) }
    }

    /// The client sent EOF (half-close).
    func clientInputClosed() {
        guard !ended, !clientEOF else { return }
        clientEOF = true
        if writesInFlight == 0 { closeUpstreamWrite() }
    }

    /// The client connection is gone.
    func clientClosed() {
        connection = nil
        // With EOF both ways the connection closing (the client's side shutting down after the
        // proxy closed its output) is the natural end.
        end(clientEOF && upstreamEOF ? .closed : .clientClosed)
    }

    private func closeUpstreamWrite() {
        guard !upstreamWriteClosed else { return }
        upstreamWriteClosed = true
        stream.closeWrite()
        endIfBothClosed()
    }

    // MARK: upstream → client

    private func readFromUpstream() {
        stream.readData(ofMinLength: 1, maxLength: Self.readSize, timeout: .zero) { [self] bytes, atEOF, error in
            onLoop { [self] in
                guard !ended else { return }
                if let error {
                    end(.upstreamFailed, error)
                } else if let bytes, bytes.readableBytes > 0 {
                    forwardToClient(bytes, thenEOF: atEOF)
                } else if atEOF {
                    upstreamEnded()
                } else {
                    readFromUpstream()
                }
            }
        }
    }

    private func forwardToClient(_ bytes: ByteBuffer, thenEOF atEOF: Bool) {
        var bytes = bytes
        lastActivity = eventLoop.now
        if frames != nil {
            guard !closingItself else { return }
            switch frames!.fromUpstream(bytes) {
            case .forward(let passing): bytes = passing
            case .tooBig(let passing):
                if passing.readableBytes > 0 { _ = connection?.writeRaw(passing) }
                closeBothSides(code: 1009)
                return
            }
            if bytes.readableBytes == 0 {
                if atEOF { upstreamEnded() } else { readFromUpstream() }
                return
            }
        }
        guard let written = connection?.writeRaw(bytes) else {
            end(.clientClosed)
            return
        }
        totals.toClient += Int64(bytes.readableBytes)
        written.whenComplete { [self] result in
            onLoop { [self] in
                guard !ended else { return }
                switch result {
                case .failure:
                    end(.clientFailed, SessionError(.networkConnectionLost, nil, "the client connection failed"))
                case .success where atEOF:
                    upstreamEnded()
                case .success:
                    readFromUpstream()
                }
            }
        }
    }

    private func upstreamEnded() {
        // After the end, nothing more goes to the client: cancelling the stream task in `end`
        // completes it, which would otherwise half-close a connection about to be reset.
        guard !ended, !upstreamEOF else { return }
        upstreamEOF = true
        connection?.closeOutput()
        endIfBothClosed()
    }

    // MARK: stream task delegate

    func streamTask(_ task: StreamTask, readClosedFor: Void) {
        // The EOF also reaches the pending read, which forwards it after the bytes before it.
    }

    func streamTask(_ task: StreamTask, writeClosedFor: Void) {
        upstreamWriteSideClosed()
    }

    func task(_ task: SessionTask, didCompleteWithError error: SessionError?) {
        upstreamCompleted(error)
    }

    /// The upstream's write side closed (after ``RelayUpstream/closeWrite()``).
    func upstreamWriteSideClosed() {
        onLoop { self.endIfBothClosed() }
    }

    /// The upstream completed: with an error the relay ends with it; without, its connection
    /// closed and the client gets what was read, then EOF.
    func upstreamCompleted(_ error: SessionError?) {
        onLoop {
            if let error { self.end(.upstreamFailed, error) } else if !self.upstreamEOF { self.upstreamEnded() }
        }
    }

    // MARK: ending

    private func endIfBothClosed() {
        if upstreamEOF, upstreamWriteClosed { end(.closed) }
    }

    // MARK: WebSocket

    /// Closes both sides with a close frame of the proxy's own (to the upstream masked, as a
    /// client's must be), where that side's stream is at a frame boundary, then ends the relay.
    private func closeBothSides(code: Int) {
        guard !ended, !closingItself, var frames else { return }
        closingItself = true
        frames.proxyCloses(with: code)
        self.frames = frames
        var written: [EventLoopFuture<Void>] = []
        if frames.toClient.atFrameBoundary, let toClient = connection?.writeRaw(WebSocketFrameMeter.closeFrame(code: code, masked: false)) {
            written.append(toClient)
        }
        if frames.toUpstream.atFrameBoundary {
            let toUpstream = eventLoop.makePromise(of: Void.self)
            stream.write(WebSocketFrameMeter.closeFrame(code: code, masked: true), timeout: .seconds(1)) { _ in toUpstream.succeed() }
            written.append(toUpstream.futureResult)
        }
        EventLoopFuture.whenAllComplete(written, on: eventLoop).whenComplete { [self] _ in onLoop { self.end(.proxyClosed) } }
    }

    /// Checks for the idle timeout at the earliest moment it can have passed (one timer per
    /// relay, set again from the last activity rather than moved on every byte).
    private func scheduleIdleCheck() {
        guard let idle = idleTimeout, !ended else { return }
        idleCheck = eventLoop.scheduleTask(deadline: lastActivity + TimeAmount(idle)) { [self] in
            guard !ended, !closingItself else { return }
            guard eventLoop.now >= lastActivity + TimeAmount(idle) else {
                scheduleIdleCheck()
                return
            }
            if frames != nil {
                closeBothSides(code: 1001)
            } else {
                end(.idleTimeout)
            }
        }
    }

    private func end(_ reason: RelayEnd, _ error: SessionError? = nil) {
        guard !ended else { return }
        ended = true
        totals.end = reason
        idleCheck?.cancel()
        totals.webSocket = frames?.totals
        if stream.isRunning { stream.cancel() }
        connection?.close()
        connection = nil
        onEnd(totals, error)
    }

    private func onLoop(_ body: @escaping @Sendable () -> Void) {
        if eventLoop.inEventLoop { body() } else { eventLoop.execute(body) }
    }
}
