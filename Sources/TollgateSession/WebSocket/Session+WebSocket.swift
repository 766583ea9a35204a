public import NIOCore
public import TollgateHTTP
import TollgateCache

/// Creating WebSocket tasks.
extension Session {
    /// A WebSocket task for `url` (`ws`, `wss`, or their `http`, `https` equivalents), offering
    /// `protocols` as subprotocols (`Sec-WebSocket-Protocol`), in order of preference.
    public func webSocketTask(
        with url: HTTPURL,
        protocols: [String] = [],
        on eventLoop: (any EventLoop)? = nil
    ) throws(SessionError) -> WebSocketTask {
        try makeWebSocketTask(Request(url: url), protocols: protocols, on: eventLoop)
    }

    /// A WebSocket task for `request`: its header fields go with the handshake (the subprotocols
    /// offered are its `Sec-WebSocket-Protocol`); its method, body and cache policy are not used.
    public func webSocketTask(with request: Request, on eventLoop: (any EventLoop)? = nil) throws(SessionError) -> WebSocketTask {
        let offered = FieldList.elements(request.headerFields.values(for: "Sec-WebSocket-Protocol")).map(String.init)
        return try makeWebSocketTask(request, protocols: offered, on: eventLoop)
    }

    private func makeWebSocketTask(_ request: Request, protocols: [String], on eventLoop: (any EventLoop)?) throws(SessionError) -> WebSocketTask {
        let handshake = WebSocketHandshake(protocols: protocols, offersCompression: configuration.webSocketCompression)
        var request = request
        // The handshake is an HTTP request: ws is loaded as http, wss as https (same port).
        let url = request.url
        switch url.scheme {
        case "ws": request.url = HTTPURL(scheme: "http", host: url.host, port: url.port, pathAndQuery: url.pathAndQuery)
        case "wss": request.url = HTTPURL(scheme: "https", host: url.host, port: url.port, pathAndQuery: url.pathAndQuery)
        default: break
        }
        request.method = .get
        request.body = nil
        request.cachePolicy = .reload
        handshake.addFields(to: &request.headerFields)
        return try makeTask(request: request, eventLoop: eventLoop) {
            WebSocketTask(session: self, identifier: $0, request: request, handshake: handshake, eventLoop: $1)
        }
    }
}
