import NIOCore
import NIOWebSocket

/// What one WebSocket connection does next (RFC 6455 §5–7), as a pure state machine: events in
/// (the application's sends, receives, pings and cancels; frames and the connection's end from
/// the network), actions out. No I/O and no completion handlers: those stay with the runner
/// (``WebSocketTask``), which keeps the application's handlers in three first-in-first-out
/// queues (sends not yet written, receives, pings) that the actions name by position — the
/// first waiting one — since every answer comes in the order the calls were made.
struct WebSocketMachine {
    enum Action: Equatable {
        /// Write this frame (the runner masks it, as every client frame must be). With
        /// `completesSend`, the first queued send's handler goes with the write.
        case write(WebSocketFrame, completesSend: Bool)
        /// Answer the first waiting receive with this message.
        case deliver(WebSocketMessage)
        /// Answer the first waiting receive with an error.
        case failReceive(SessionError)
        /// Answer the first queued send with an error (nothing is written for it).
        case failSend(SessionError)
        /// Answer the first outstanding ping with an error.
        case failPing(SessionError)
        /// Answer the first outstanding ping: its pong arrived.
        case answerPing
        /// Answer every waiting receive, queued send and outstanding ping with this error.
        case failAllWaiting(SessionError)
        /// The peer's close frame arrived (`didCloseWith`; code 1005 when it carried none).
        case reportClose(WebSocketCloseCode, reason: ByteBuffer?)
        /// Wait for the peer's close frame, at most the close timeout (then ``closeTimedOut()``).
        case awaitPeerClose
        /// Close the connection once the frames written before are out, and complete the task.
        case closeConnection(SessionError?)
    }

    /// What the application asked for before the connection opened, in order.
    enum Queued: Equatable {
        case message(WebSocketMessage)
        case ping
    }

    /// How a connection ended: the close code (``WebSocketTask/closeCode``) and reason.
    struct Closure: Equatable {
        var code: WebSocketCloseCode
        var reason: ByteBuffer?
    }

    /// A message whose frames are arriving.
    struct Partial {
        var isText: Bool
        var payload: ByteBuffer
    }

    private enum State {
        /// Before the handshake completed.
        case connecting(queued: [Queued])
        /// Open; `partial` is the message being reassembled.
        case open(partial: Partial?)
        /// The task sent a close frame and waits for the peer's.
        case closing(sent: Closure)
        /// Closed (or the handshake failed: code `.invalid`).
        case closed(Closure)
    }

    private var state: State = .connecting(queued: [])
    /// Whole messages that arrived before a receive asked for them (kept after a close too).
    private(set) var ready: [WebSocketMessage] = []
    private(set) var waitingReceives = 0
    private(set) var outstandingPings = 0
    /// The error that ended the connection, given to later calls too (nil after an orderly close).
    private var failure: SessionError?
    /// The largest message accepted, fragments counted together (`maximumMessageSize`).
    var maximumMessageSize: Int

    /// Messages kept unread before the runner stops reading the socket (back-pressure).
    static let readAhead = 8

    init(maximumMessageSize: Int) {
        self.maximumMessageSize = maximumMessageSize
    }

    /// The close code and reason once closed; nil while connecting, open or closing.
    var closure: Closure? {
        if case .closed(let closure) = state { return closure }
        return nil
    }

    var isOpen: Bool {
        if case .open = state { return true }
        return false
    }

    /// Whether the runner should read from the socket: while open and not too far ahead of the
    /// application (pings and a peer's close are read meanwhile), and while waiting for a close.
    var wantsToRead: Bool {
        switch state {
        case .open: ready.count < Self.readAhead
        case .closing: true
        case .connecting, .closed: false
        }
    }

    // MARK: the application

    mutating func send(_ message: WebSocketMessage) -> [Action] {
        switch state {
        case .connecting(var queued):
            queued.append(.message(message))
            state = .connecting(queued: queued)
            return []
        case .open:
            return [.write(Self.frame(for: message), completesSend: true)]
        case .closing, .closed:
            return [.failSend(notOpen("send"))]
        }
    }

    mutating func receive() -> [Action] {
        if !ready.isEmpty { return [.deliver(ready.removeFirst())] }
        switch state {
        case .connecting, .open:
            waitingReceives += 1
            return []
        case .closing, .closed:
            return [.failReceive(notOpen("receive"))]
        }
    }

    mutating func sendPing() -> [Action] {
        switch state {
        case .connecting(var queued):
            queued.append(.ping)
            state = .connecting(queued: queued)
            return []
        case .open:
            outstandingPings += 1
            return [.write(WebSocketFrame(fin: true, opcode: .ping, data: ByteBuffer()), completesSend: false)]
        case .closing, .closed:
            return [.failPing(notOpen("ping"))]
        }
    }

    /// `cancel(with:reason:)`: the closing handshake, begun by the task. A code that may not be
    /// sent (1005, 1006, 1015, `.invalid`) sends a close frame without a code.
    mutating func close(code: WebSocketCloseCode, reason: ByteBuffer?) -> [Action] {
        guard case .open = state else { return [] }
        let sendable = code.isAllowedOnTheWire
        let sent = Closure(code: sendable ? code : .noStatusReceived, reason: sendable ? reason : nil)
        state = .closing(sent: sent)
        return [
            .write(Self.closeFrame(sent), completesSend: false),
            .failAllWaiting(SessionError(.cancelled, nil, "the WebSocket is closing (\(sent.code))")),
            .awaitPeerClose,
        ] + resetWaiting()
    }

    /// `cancel()`: a close frame without a code, and the connection closes at once.
    mutating func cancel() -> [Action] {
        guard case .open = state else { return [] }
        let error = SessionError(.cancelled, nil, "the task was cancelled")
        state = .closed(Closure(code: .noStatusReceived, reason: nil))
        return [
            .write(Self.closeFrame(Closure(code: .noStatusReceived, reason: nil)), completesSend: false),
            .failAllWaiting(error), .closeConnection(error),
        ] + resetWaiting()
    }

    // MARK: the network

    /// The 101 was accepted: what waited goes out, in order.
    mutating func handshakeCompleted() -> [Action] {
        guard case .connecting(let queued) = state else { return [] }
        state = .open(partial: nil)
        return queued.flatMap { item -> [Action] in
            switch item {
            case .message(let message): send(message)
            case .ping: sendPing()
            }
        }
    }

    /// The handshake failed (or the task ended before it completed): everything waiting fails.
    mutating func handshakeFailed(_ error: SessionError) -> [Action] {
        guard case .connecting = state else { return [] }
        state = .closed(Closure(code: .invalid, reason: nil))
        // A call made after the handshake failed gets that failure too (not "never opened"):
        // a send queued a moment after resume() must not depend on which came first.
        failure = error
        return [.failAllWaiting(error)] + resetWaiting()
    }

    /// A frame from the server (unmasking, if any, is the check's business: servers must not mask).
    mutating func frameReceived(_ frame: WebSocketFrame) -> [Action] {
        switch state {
        case .open(let partial):
            return openFrameReceived(frame, partial: partial)
        case .closing(let sent):
            // Data after our close frame is dropped (RFC 6455 §5.5.1); the peer's close ends it.
            guard frame.opcode == .connectionClose else { return [] }
            state = .closed(sent)
            let peer = (try? Self.parseClose(frame.unmaskedData)) ?? Closure(code: .noStatusReceived, reason: nil)
            return [.reportClose(peer.code, reason: peer.reason), .closeConnection(nil)]
        case .connecting, .closed:
            return []
        }
    }

    /// The frame decoder refused the input: a frame over the size limit, or malformed.
    mutating func decodingFailed(_ error: NIOWebSocketError) -> [Action] {
        switch error {
        case .invalidFrameLength: failConnection(.messageTooBig, "a frame is larger than maximumMessageSize (\(maximumMessageSize) bytes)")
        case .fragmentedControlFrame: failConnection(.protocolError, "a fragmented control frame")
        case .multiByteControlFrameLength: failConnection(.protocolError, "a control frame longer than 125 bytes")
        }
    }

    /// A compressed message (permessage-deflate) would not decompress (1007), or would be larger
    /// than ``maximumMessageSize`` (1009).
    mutating func inflationFailed(_ failure: MessageInflater.Failure) -> [Action] {
        switch failure {
        case .tooBig: tooBig()
        case .corrupt(let why): failConnection(.invalidFramePayloadData, "a compressed message that does not decompress (\(why))")
        }
    }

    /// The TCP connection is gone.
    mutating func connectionClosed() -> [Action] {
        switch state {
        case .open:
            state = .closed(Closure(code: .abnormalClosure, reason: nil))
            let error = SessionError(.networkConnectionLost, nil, "the WebSocket connection closed without a close frame")
            failure = error
            return [.failAllWaiting(error), .closeConnection(error)] + resetWaiting()
        case .closing(let sent):
            // The task asked to close; the server closed without answering: closed all the same.
            state = .closed(sent)
            return [.closeConnection(nil)]
        case .connecting, .closed:
            return []
        }
    }

    /// No close frame from the peer within the close timeout after the task's.
    mutating func closeTimedOut() -> [Action] {
        guard case .closing(let sent) = state else { return [] }
        state = .closed(sent)
        return [.closeConnection(SessionError(.timedOut, nil, "the server did not answer the close frame"))]
    }

    // MARK: frames

    private mutating func openFrameReceived(_ frame: WebSocketFrame, partial: Partial?) -> [Action] {
        if frame.maskKey != nil { return failConnection(.protocolError, "the server sent a masked frame") }
        if frame.rsv1 || frame.rsv2 || frame.rsv3 {
            return failConnection(.protocolError, "a frame with reserved bits set that no extension gives a meaning")
        }
        switch frame.opcode {
        case .text, .binary:
            guard partial == nil else { return failConnection(.protocolError, "a new message began before the last one ended") }
            return dataReceived(Partial(isText: frame.opcode == .text, payload: frame.data), fin: frame.fin)
        case .continuation:
            guard var partial else { return failConnection(.protocolError, "a continuation frame outside a message") }
            guard partial.payload.readableBytes + frame.length <= maximumMessageSize else { return tooBig() }
            var data = frame.data
            partial.payload.writeBuffer(&data)
            return dataReceived(partial, fin: frame.fin)
        case .ping:
            return [.write(WebSocketFrame(fin: true, opcode: .pong, data: frame.data), completesSend: false)]
        case .pong:
            // An unsolicited pong is allowed (a heartbeat) and answers nothing.
            guard outstandingPings > 0 else { return [] }
            outstandingPings -= 1
            return [.answerPing]
        case .connectionClose:
            return peerClosed(frame.data)
        default:
            return failConnection(.protocolError, "a frame with the reserved opcode \(frame.opcode)")
        }
    }

    private mutating func dataReceived(_ partial: Partial, fin: Bool) -> [Action] {
        guard partial.payload.readableBytes <= maximumMessageSize else { return tooBig() }
        guard fin else {
            state = .open(partial: partial)
            return []
        }
        state = .open(partial: nil)
        let message: WebSocketMessage
        if partial.isText {
            guard let text = String(validating: partial.payload.readableBytesView, as: UTF8.self) else {
                return failConnection(.invalidFramePayloadData, "a text message that is not UTF-8")
            }
            message = .string(text)
        } else {
            message = .data(partial.payload)
        }
        guard waitingReceives > 0 else {
            ready.append(message)
            return []
        }
        waitingReceives -= 1
        return [.deliver(message)]
    }

    /// The server began the closing handshake: answered with its code, and closed.
    private mutating func peerClosed(_ payload: ByteBuffer) -> [Action] {
        let peer: Closure
        do {
            peer = try Self.parseClose(payload)
        } catch {
            return failConnection(error.code, error.reason)
        }
        state = .closed(peer)
        let echo = peer.code == .noStatusReceived ? peer : Closure(code: peer.code, reason: nil)
        let error = SessionError(.networkConnectionLost, nil, "the server closed the WebSocket (\(peer.code))")
        return [.reportClose(peer.code, reason: peer.reason), .write(Self.closeFrame(echo), completesSend: false)]
            + [.failAllWaiting(error), .closeConnection(nil)] + resetWaiting()
    }

    private mutating func tooBig() -> [Action] {
        failConnection(.messageTooBig, "a message is larger than maximumMessageSize (\(maximumMessageSize) bytes)")
    }

    /// _Fail the WebSocket Connection_ (RFC 6455 §7.1.7): a close frame with `code`, then close.
    private mutating func failConnection(_ code: WebSocketCloseCode, _ reason: String) -> [Action] {
        guard case .open = state else { return [] }
        state = .closed(Closure(code: code, reason: nil))
        let error =
            code == .messageTooBig
            ? SessionError(.dataLengthExceedsMaximum, nil, "\(reason); closed with 1009")
            : SessionError(.badServerResponse, nil, "WebSocket protocol error: \(reason); closed with \(code)")
        failure = error
        return [.write(Self.closeFrame(Closure(code: code, reason: nil)), completesSend: false), .failAllWaiting(error), .closeConnection(error)]
            + resetWaiting()
    }

    private mutating func resetWaiting() -> [Action] {
        waitingReceives = 0
        outstandingPings = 0
        return []
    }

    private func notOpen(_ what: String) -> SessionError {
        if let failure { return failure }
        return switch state {
        case .closing(let sent): SessionError(.networkConnectionLost, nil, "cannot \(what): the WebSocket is closing (\(sent.code))")
        case .closed(let closure) where closure.code == .invalid:
            SessionError(.networkConnectionLost, nil, "cannot \(what): the WebSocket never opened")
        case .closed(let closure): SessionError(.networkConnectionLost, nil, "cannot \(what): the WebSocket is closed (\(closure.code))")
        case .connecting, .open: SessionError(.networkConnectionLost, nil, "cannot \(what)")
        }
    }

    // MARK: close frames

    /// A close frame's payload problem (RFC 6455 §5.5.1, §7.4): the code to fail with, and why.
    struct CloseFrameError: Error {
        var code: WebSocketCloseCode
        var reason: String
    }

    /// Reads a close frame's payload: no payload is code 1005; one byte, or a code that may not
    /// be sent, is a protocol error; a reason that is not UTF-8 is 1007.
    static func parseClose(_ payload: ByteBuffer) throws(CloseFrameError) -> Closure {
        var payload = payload
        guard payload.readableBytes > 0 else { return Closure(code: .noStatusReceived, reason: nil) }
        guard let raw = payload.readInteger(as: UInt16.self) else {
            throw CloseFrameError(code: .protocolError, reason: "a close frame with a one-byte payload")
        }
        let code = WebSocketCloseCode(rawValue: Int(raw))
        guard code.isAllowedOnTheWire else { throw CloseFrameError(code: .protocolError, reason: "a close frame with the code \(code)") }
        guard payload.readableBytes > 0 else { return Closure(code: code, reason: nil) }
        guard String(validating: payload.readableBytesView, as: UTF8.self) != nil else {
            throw CloseFrameError(code: .invalidFramePayloadData, reason: "a close reason that is not UTF-8")
        }
        return Closure(code: code, reason: payload)
    }

    /// A close frame for `closure` (no payload for 1005); the reason is cut to the 123 bytes a
    /// control frame leaves for it.
    static func closeFrame(_ closure: Closure) -> WebSocketFrame {
        var payload = ByteBuffer()
        if closure.code != .noStatusReceived {
            payload.writeInteger(UInt16(closure.code.rawValue))
            if var reason = closure.reason, let cut = reason.readSlice(length: min(123, reason.readableBytes)) {
                payload.writeImmutableBuffer(cut)
            }
        }
        return WebSocketFrame(fin: true, opcode: .connectionClose, data: payload)
    }

    static func frame(for message: WebSocketMessage) -> WebSocketFrame {
        switch message {
        case .string(let text): WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: text))
        case .data(let bytes): WebSocketFrame(fin: true, opcode: .binary, data: bytes)
        }
    }
}
