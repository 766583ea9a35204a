public import NIOCore

/// WebSocket task messages, in the model of `URLSessionWebSocketDelegate`.
public protocol WebSocketTaskDelegate: TaskDelegate {
    /// The handshake succeeded; `protocol` is the subprotocol the server chose (nil: none).
    func webSocketTask(_ task: WebSocketTask, didOpenWithProtocol protocol: String?)
    /// The server's close frame arrived: its code (1005 when it had none) and reason.
    func webSocketTask(_ task: WebSocketTask, didCloseWith closeCode: WebSocketCloseCode, reason: ByteBuffer?)
}

extension WebSocketTaskDelegate {
    public func webSocketTask(_ task: WebSocketTask, didOpenWithProtocol protocol: String?) { DelegateDispatch.markUnanswered() }
    public func webSocketTask(_ task: WebSocketTask, didCloseWith closeCode: WebSocketCloseCode, reason: ByteBuffer?) {
        DelegateDispatch.markUnanswered()
    }
}
