public import NIOCore
import Synchronization
import TollgateHTTP

/// A task that exchanges WebSocket messages (RFC 6455) over TCP or TLS, in the model of
/// `URLSessionWebSocketTask`.
///
/// The opening handshake is an HTTP request on the session's normal path (redirects,
/// authentication challenges, cookies, server trust for `wss`, the upstream proxy); once the
/// server's 101 checks out, the connection leaves the pool and carries frames. Sends, receives
/// and pings made before the handshake completes wait and run in order after it.
///
/// ```swift
/// let task = try session.webSocketTask(with: HTTPURL(string: "ws://127.0.0.1:8765/")!)
/// task.resume()
/// try await task.send(.string("hello"))
/// let reply = try await task.receive()
/// task.cancel(with: .normalClosure, reason: nil)
/// ```
public final class WebSocketTask: SessionTask, @unchecked Sendable {
    /// The default ``maximumMessageSize``: 1 MiB.
    public static let defaultMaximumMessageSize = 1 << 20
    /// How long a close begun by ``cancel(with:reason:)`` waits for the server's close frame.
    static let closeTimeout: TimeAmount = .seconds(5)

    struct Shared {
        var maximumMessageSize = WebSocketTask.defaultMaximumMessageSize
        var closeCode = WebSocketCloseCode.invalid
        var closeReason: ByteBuffer?
        var chosenProtocol: String?
        /// permessage-deflate as the server agreed to it (nil: messages travel uncompressed).
        var compression: PerMessageDeflate?
    }

    /// What may be read from any thread.
    let shared = Mutex(Shared())
    let handshake: WebSocketHandshake

    // Touched only on the task's event loop.
    var machine = WebSocketMachine(maximumMessageSize: WebSocketTask.defaultMaximumMessageSize)
    var receiveHandlers: [@Sendable (Result<WebSocketMessage, SessionError>) -> Void] = []
    /// Sends whose frame is not written yet (queued before the handshake).
    var sendHandlers: [@Sendable (SessionError?) -> Void] = []
    var pingHandlers: [@Sendable (SessionError?) -> Void] = []
    var frames: WebSocketFrameHandler?
    var channel: (any Channel)?
    var closeTimer: Scheduled<Void>?
    var readDemand = false

    init(session: Session, identifier: Int, request: Request, handshake: WebSocketHandshake, eventLoop: any EventLoop) {
        self.handshake = handshake
        super.init(session: session, identifier: identifier, request: request, eventLoop: eventLoop, delegate: nil)
    }

    // MARK: properties

    /// The largest message accepted, its fragments counted together (default 1 MiB). A larger
    /// message fails the waiting receive and the task with `dataLengthExceedsMaximum`, and closes
    /// the connection with 1009. Set it before the handshake completes: the frame decoder is made
    /// with the value of that moment.
    public var maximumMessageSize: Int {
        get { shared.withLock { $0.maximumMessageSize } }
        set {
            let size = max(125, newValue)
            shared.withLock { $0.maximumMessageSize = size }
            onLoop { [self] in machine.maximumMessageSize = size }
        }
    }

    /// How the connection closed: ``WebSocketCloseCode/invalid`` while it is open (or never
    /// opened); the server's code when it closed first (1005 when its frame had none); the task's
    /// own when it closed first (1005 for ``cancel()``) or found a protocol error (1002, 1007,
    /// 1009); 1006 when the connection was lost without a close frame.
    public var closeCode: WebSocketCloseCode { shared.withLock { $0.closeCode } }

    /// The reason that went with ``closeCode`` (nil when there was none).
    public var closeReason: ByteBuffer? { shared.withLock { $0.closeReason } }

    /// The subprotocol the server chose (nil: none, or not open yet).
    public var chosenProtocol: String? { shared.withLock { $0.chosenProtocol } }

    /// Whether the server agreed to permessage-deflate (RFC 7692; offered unless the session's
    /// `webSocketCompression` is off): messages then travel compressed both ways. False until
    /// the handshake completes.
    public var usesCompression: Bool { shared.withLock { $0.compression != nil } }

    // MARK: messages

    /// Sends a message; the handler gets nil once its frame was handed to the kernel (not a
    /// sign that the server received it), or an error.
    public func send(_ message: WebSocketMessage, completionHandler: @escaping @Sendable (SessionError?) -> Void) {
        onLoop { [self] in
            sendHandlers.append(completionHandler)
            run(machine.send(message))
        }
    }

    /// Sends a message (see ``send(_:completionHandler:)``); throws a ``SessionError``.
    public func send(_ message: WebSocketMessage) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            send(message) { error in
                if let error { continuation.resume(throwing: error) } else { continuation.resume() }
            }
        }
    }

    /// Receives the next whole message. Fails once the connection is closed and every message
    /// that arrived before was received, and when a message breaks ``maximumMessageSize``.
    public func receive(completionHandler: @escaping @Sendable (Result<WebSocketMessage, SessionError>) -> Void) {
        onLoop { [self] in
            receiveHandlers.append(completionHandler)
            run(machine.receive())
        }
    }

    /// Receives the next whole message (see ``receive(completionHandler:)``); throws a ``SessionError``.
    public func receive() async throws -> WebSocketMessage {
        try await withCheckedThrowingContinuation { continuation in
            receive { result in continuation.resume(with: result.mapError { $0 as any Error }) }
        }
    }

    /// Sends a ping; the handler gets nil when its pong arrives — handlers are answered in the
    /// order the pings were sent — or an error when the connection closes first.
    public func sendPing(pongReceiveHandler: @escaping @Sendable (SessionError?) -> Void) {
        onLoop { [self] in
            pingHandlers.append(pongReceiveHandler)
            run(machine.sendPing())
        }
    }

    /// Closes the connection with a close frame carrying `closeCode` and `reason` (cut to 123
    /// bytes), waits for the server's close frame (5 s at most), then closes the connection. The
    /// task completes without an error when the server answered. Before the handshake completed
    /// this is ``cancel()``. A code that may not be sent (1005, 1006, 1015, `.invalid`) sends a
    /// close frame without a code.
    public func cancel(with closeCode: WebSocketCloseCode, reason: ByteBuffer?) {
        let action = observed.withLock { $0.lifecycle.cancel() }
        guard action == .cancel else { return }
        onLoop { [self] in
            if machine.isOpen { run(machine.close(code: closeCode, reason: reason)) } else { cancelWork() }
        }
    }
}
