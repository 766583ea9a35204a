public import NIOCore

/// One WebSocket message, as `URLSessionWebSocketTask.Message`: text or binary. Messages are
/// whole: a message the server sent in fragments is reassembled before it is delivered.
public enum WebSocketMessage: Sendable, Hashable {
    /// A text message (sent in text frames; what is received is checked to be UTF-8).
    case string(String)
    /// A binary message.
    case data(ByteBuffer)
}
