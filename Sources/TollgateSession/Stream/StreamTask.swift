import Foundation
import NIOConcurrencyHelpers
public import NIOCore
import NIOPosix
public import TollgateHTTP

/// A task that gives its owner a TCP connection as a byte stream (`URLSessionStreamTask`):
/// reads and writes with completion handlers, and half-close with ``closeRead()`` and
/// ``closeWrite()``. The proxy carries CONNECT tunnels and upgraded connections on these.
///
/// It connects on `resume()`; reads and writes made before that wait for the connection.
public final class StreamTask: SessionTask, @unchecked Sendable {
    /// The host and port it connects to (nil for a stream task made from an upgraded data task).
    public let hostName: String?
    /// The port.
    public let port: Int?

    /// Touched only on the event loop.
    var channel: (any Channel)?
    var streamHandler: StreamConnectionHandler?
    var waitingForChannel: [@Sendable () -> Void] = []
    var readClosedReported = false
    var writeClosed = false
    /// ``closeRead()`` was called: reads fail from then on.
    var readClosedByCaller = false
    /// What broke the stream (the connection's failure, a write that timed out): every later read
    /// and write fails with it.
    var streamError: SessionError?
    /// ``startSecureConnection()`` was called.
    var secureConnectionStarted = false
    private let connectFields = NIOLockedValueBox<HeaderFields?>(nil)

    /// Header fields for the `CONNECT` this task sends through the session's upstream proxy,
    /// instead of the session's ``SessionConfiguration/upstreamProxyConnectHeaderFields``; nil
    /// (the default): the session's. Set before `resume()`. A proxy relaying its client's
    /// CONNECT passes the client's `CDN-Loop` members on with its own.
    public var connectHeaderFields: HeaderFields? {
        get { connectFields.withLockedValue { $0 } }
        set { connectFields.withLockedValue { $0 = newValue } }
    }

    /// `request`: the original request of the data task an upgraded stream task comes from.
    init(
        session: Session,
        identifier: Int,
        host: String?,
        port: Int?,
        request: Request? = nil,
        eventLoop: any EventLoop,
        delegate: (any TaskDelegate)?
    ) {
        self.hostName = host
        self.port = port
        super.init(session: session, identifier: identifier, request: request, eventLoop: eventLoop, delegate: delegate)
    }

    /// Reads at least `minLength` and at most `maxLength` bytes. The handler gets the bytes (nil
    /// when none), whether the peer closed its side (EOF), and an error. Fewer than `minLength`
    /// bytes arrive only at EOF. A `timeout` of zero waits forever.
    public func readData(
        ofMinLength minLength: Int,
        maxLength: Int,
        timeout: Duration,
        completionHandler: @escaping @Sendable (ByteBuffer?, Bool, SessionError?) -> Void
    ) {
        whenConnected { [self] in
            if let refusal = refusalToRead() {
                completionHandler(nil, false, refusal)
                return
            }
            guard let handler = streamHandler else {
                // Never connected: the reason it did not (cannotConnectToHost, a refused CONNECT).
                completionHandler(nil, true, error ?? SessionError(.networkConnectionLost, nil, "the stream is closed"))
                return
            }
            let promise = eventLoop.makePromise(of: (ByteBuffer?, Bool).self)
            let timer: Scheduled<Void>? = timeout > .zero
                ? eventLoop.scheduleTask(in: TimeAmount(timeout)) {
                    self.onChannelLoop {
                        handler.cancelRead(promise, error: SessionError(.timedOut, nil, "no data within \(timeout)"))
                    }
                }
                : nil
            onChannelLoop { handler.read(minLength: minLength, maxLength: maxLength, promise: promise) }
            promise.futureResult.whenComplete { result in
                timer?.cancel()
                switch result {
                case .success(let (bytes, eof)): completionHandler(bytes, eof, nil)
                case .failure(let error): completionHandler(nil, false, Self.streamFailure(error))
                }
            }
        }
    }

    /// Writes `data`; the handler runs once the bytes were handed to the kernel (or failed).
    public func write(_ data: ByteBuffer, timeout: Duration, completionHandler: @escaping @Sendable (SessionError?) -> Void) {
        whenConnected { [self] in
            if let streamError {
                completionHandler(streamError)
                return
            }
            guard let channel else {
                completionHandler(error ?? SessionError(.networkConnectionLost, nil, "the stream is closed"))
                return
            }
            guard !writeClosed else {
                completionHandler(SessionError(.networkConnectionLost, nil, "the stream's write side is closed (closeWrite)"))
                return
            }
            // Whichever comes first answers the write: its completion, or its timeout. A write
            // that timed out may have sent part of its bytes, so the stream cannot go on: it
            // closes, and later calls fail with the timeout.
            let answered = NIOLockedValueBox(false)
            let answer: @Sendable (SessionError?) -> Void = { error in
                guard answered.withLockedValue({ let first = !$0; $0 = true; return first }) else { return }
                completionHandler(error)
            }
            let timer: Scheduled<Void>? = timeout > .zero
                ? eventLoop.scheduleTask(in: TimeAmount(timeout)) { [self] in
                    let timedOut = SessionError(.timedOut, nil, "the write was not taken within \(timeout)")
                    if streamError == nil { streamError = timedOut }
                    answer(timedOut)
                    channel.close(promise: nil)
                }
                : nil
            let handler = streamHandler
            channel.writeAndFlush(data).whenComplete { result in
                timer?.cancel()
                switch result {
                case .success: answer(nil)
                // On the channel's loop: what broke the stream (a refused trust) explains a
                // write that failed because the connection then closed.
                case .failure(let error): answer(Self.streamFailure(handler?.failure ?? error))
                }
            }
        }
    }

    /// Stops reading: the peer's further bytes are discarded (shutdown of the socket's read side).
    public func closeRead() {
        whenConnected { [self] in
            readClosedByCaller = true
            channel?.close(mode: .input, promise: nil)
            reportReadClosed()
            finishIfBothClosed()
        }
    }

    /// Sends EOF to the peer (shutdown of the socket's write side); reads go on.
    public func closeWrite() {
        whenConnected { [self] in
            guard let channel, !writeClosed else { return }
            writeClosed = true
            channel.close(mode: .output).whenComplete { [self] _ in
                let receivers = delegates(as: (any StreamTaskDelegate).self)
                DelegateDispatch.notify(receivers) { $0.streamTask(self, writeClosedFor: ()) }
                finishIfBothClosed()
            }
        }
    }

    func reportReadClosed() {
        guard !readClosedReported else { return }
        readClosedReported = true
        let receivers = delegates(as: (any StreamTaskDelegate).self)
        DelegateDispatch.notify(receivers) { $0.streamTask(self, readClosedFor: ()) }
    }

    func finishIfBothClosed() {
        if readClosedReported && writeClosed {
            channel?.close(promise: nil)
        }
    }

    /// Runs `body` on the connection's event loop: the stream handler lives there, and after an
    /// upgrade that loop can differ from the task's.
    func onChannelLoop(_ body: @escaping @Sendable () -> Void) {
        guard let loop = channel?.eventLoop, !loop.inEventLoop else {
            body()
            return
        }
        loop.execute(body)
    }

    /// Why a read cannot be made now (nil: it can): the stream broke, or its read side was closed.
    private func refusalToRead() -> SessionError? {
        if let streamError { return streamError }
        if readClosedByCaller {
            return SessionError(.networkConnectionLost, nil, "the stream's read side is closed (closeRead)")
        }
        return nil
    }

    /// A connection's error as the stream's (`networkConnectionLost`, unless it is one already).
    static func streamFailure(_ error: any Error) -> SessionError {
        error as? SessionError ?? SessionError(.networkConnectionLost, nil, "\(error)")
    }

    func whenConnected(_ body: @escaping @Sendable () -> Void) {
        onLoop { [self] in
            if channel != nil || streamHandler != nil || isDone { body() } else { waitingForChannel.append(body) }
        }
    }
}

/// Stream-task messages, in the model of `URLSessionStreamDelegate`.
public protocol StreamTaskDelegate: TaskDelegate {
    /// The peer closed its side: reads return what is buffered, then EOF.
    func streamTask(_ task: StreamTask, readClosedFor: Void)
    /// The write side is closed (after ``StreamTask/closeWrite()``).
    func streamTask(_ task: StreamTask, writeClosedFor: Void)
}

extension StreamTaskDelegate {
    public func streamTask(_ task: StreamTask, readClosedFor: Void) { DelegateDispatch.markUnanswered() }
    public func streamTask(_ task: StreamTask, writeClosedFor: Void) { DelegateDispatch.markUnanswered() }
}
