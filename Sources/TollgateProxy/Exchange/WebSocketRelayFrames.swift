import NIOCore

/// Both directions of a relayed WebSocket connection: a ``WebSocketFrameMeter`` each way, which
/// side closed first, and the totals the access log and `/metrics` report. Pure.
struct WebSocketRelayFrames {
    private(set) var toUpstream: WebSocketFrameMeter
    private(set) var toClient: WebSocketFrameMeter
    private var closure: (code: Int, by: WebSocketTotals.Closer)?

    init(limits: WebSocketRelayLimits) {
        toUpstream = WebSocketFrameMeter(maximumMessageSize: limits.maximumMessageSize)
        toClient = WebSocketFrameMeter(maximumMessageSize: limits.maximumMessageSize)
    }

    /// Bytes the client sent, on their way to the upstream.
    mutating func fromClient(_ bytes: ByteBuffer) -> WebSocketFrameMeter.Verdict {
        let verdict = toUpstream.consume(bytes)
        if closure == nil, let code = toUpstream.closeCode { closure = (code, .client) }
        return verdict
    }

    /// Bytes the upstream sent, on their way to the client.
    mutating func fromUpstream(_ bytes: ByteBuffer) -> WebSocketFrameMeter.Verdict {
        let verdict = toClient.consume(bytes)
        if closure == nil, let code = toClient.closeCode { closure = (code, .upstream) }
        return verdict
    }

    /// The proxy closes both sides with `code` (unless a side closed first).
    mutating func proxyCloses(with code: Int) {
        if closure == nil { closure = (code, .proxy) }
    }

    var totals: WebSocketTotals {
        WebSocketTotals(
            messagesToUpstream: toUpstream.messages, bytesToUpstream: toUpstream.payloadBytes,
            messagesToClient: toClient.messages, bytesToClient: toClient.payloadBytes,
            closeCode: closure?.code ?? 1006, closedBy: closure?.by
        )
    }
}
