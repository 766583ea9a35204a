import TollgateHTTP
import TollgateSession

/// Interim responses from the origin (RFC 9110 §15.2): 102 Processing and 103 Early Hints are
/// relayed to the client before the final response, as the origin sent them less their
/// hop-by-hop fields. They pass by the cache: the session never stores one or mixes its fields
/// into the final response, so a hit sends none.
extension ForwardExchange {
    func task(_ task: SessionTask, didReceiveInformationalResponse response: TollgateHTTP.HTTPResponseHead) {
        guard !isFinished, !responseStarted, ownAnswer == nil, let connection, connection.isActive else { return }
        noteUpstreamProgress()
        // 100 Continue is the proxy's own answer to the client's Expect (sent when the request
        // went upstream); an HTTP/1.0 client must not be sent a 1xx at all (§15.2).
        guard response.status != 100, response.status != 101, head.minorVersion >= 1 else { return }
        var fields = HopByHopHeaders.removing(from: response.headerFields)
        fields.add(name: .via, value: "1.1 tollgate")
        connection.sendInterim(HTTPResponseHead(status: response.status, reason: response.reason, headerFields: fields))
    }
}
