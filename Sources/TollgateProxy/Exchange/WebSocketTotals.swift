/// What passed through a relayed WebSocket connection, for the access log and `/metrics`.
struct WebSocketTotals: Sendable, Equatable {
    /// Who closed the connection first: the side whose close frame came first, or the proxy
    /// (a message over the limit, the idle timeout).
    enum Closer: String, Sendable {
        case client, upstream, proxy
    }

    /// Whole data messages and their payload bytes, client to upstream.
    var messagesToUpstream = 0
    var bytesToUpstream: Int64 = 0
    /// Whole data messages and their payload bytes, upstream to client.
    var messagesToClient = 0
    var bytesToClient: Int64 = 0
    /// The close code that ended the connection: the first close frame's (1005 when it had no
    /// code), the proxy's own (1009, 1001), or 1006 when the connection ended without one.
    var closeCode = 1006
    /// Who closed first (nil: the connection ended without a close frame).
    var closedBy: Closer?

    /// The JSON object the access log writes as `websocket`.
    var json: String {
        "{\"messages_to_upstream\":\(messagesToUpstream),\"bytes_to_upstream\":\(bytesToUpstream),"
            + "\"messages_to_client\":\(messagesToClient),\"bytes_to_client\":\(bytesToClient),"
            + "\"close_code\":\(closeCode),\"closed_by\":" + (closedBy.map { "\"\($0.rawValue)\"" } ?? "null") + "}"
    }
}
