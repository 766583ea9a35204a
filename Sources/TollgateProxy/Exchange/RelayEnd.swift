/// How a relayed connection — a CONNECT tunnel, a protocol upgrade — ended: the access log's
/// `tunnel.end` (JSON format), HAProxy's termination state in words.
enum RelayEnd: String, Sendable {
    /// Each side closed its half (EOF both ways), in either order.
    case closed
    /// The client's connection closed (or was reset) while the upstream side was still open.
    case clientClosed = "client-closed"
    /// Writing to the client failed.
    case clientFailed = "client-failed"
    /// The upstream connection failed: reset, a failed read or write, a TLS error.
    case upstreamFailed = "upstream-failed"
    /// No byte either way for `limits.tunnel-idle-timeout`: the proxy closed both sides.
    case idleTimeout = "idle-timeout"
    /// The proxy closed a WebSocket connection itself with a close frame of its own (1009 for a
    /// message over `websocket-max-message`, 1001 for `websocket-idle-timeout`).
    case proxyClosed = "proxy-closed"
}
