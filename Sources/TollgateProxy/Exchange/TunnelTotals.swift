/// What passed through a CONNECT tunnel or an upgrade to a protocol other than WebSocket, and
/// how it ended: the access log's `tunnel` object (JSON format).
struct TunnelTotals: Sendable, Equatable {
    /// Bytes relayed from the client to the upstream.
    var toUpstream: Int64
    /// Bytes relayed from the upstream to the client.
    var toClient: Int64
    /// How the relay ended.
    var end: RelayEnd

    /// The JSON object the access log writes as `tunnel`.
    var json: String {
        "{\"bytes_to_upstream\":\(toUpstream),\"bytes_to_client\":\(toClient),\"end\":\"\(end.rawValue)\"}"
    }
}
