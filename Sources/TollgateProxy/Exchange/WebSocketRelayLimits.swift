/// The limits a relayed WebSocket connection runs under (`limits.websocket-max-message`,
/// `limits.websocket-idle-timeout`).
struct WebSocketRelayLimits: Sendable {
    /// The largest message relayed, fragments counted together; a larger one closes both sides with 1009.
    var maximumMessageSize: Int
    /// No frame either way for this long closes both sides with 1001.
    var idleTimeout: Duration
}
