import Foundation
import NIOWebSocket
import TollgateCache
import TollgateHTTP

/// The client's side of the WebSocket opening handshake (RFC 6455 §4.1): the fields the request
/// carries, and the check of the server's 101 against them.
struct WebSocketHandshake: Sendable {
    /// RFC 6455 §1.3: appended to the key before hashing.
    static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// `Sec-WebSocket-Key`: 16 random bytes in base64.
    let key: String
    /// The subprotocols offered (`Sec-WebSocket-Protocol`), in order of preference.
    let protocols: [String]
    /// Whether permessage-deflate is offered (``PerMessageDeflate/offer``).
    let offersCompression: Bool

    init(key: String = NIOWebSocketClientUpgrader.randomRequestKey(), protocols: [String], offersCompression: Bool = false) {
        self.key = key
        self.protocols = protocols
        self.offersCompression = offersCompression
    }

    /// What a 101 that checks out agreed to.
    struct Agreement: Equatable {
        /// The subprotocol chosen (nil: none).
        var chosenProtocol: String?
        /// permessage-deflate's parameters, when the server accepted it.
        var compression: PerMessageDeflate?
    }

    /// The `Sec-WebSocket-Accept` a server must answer `key` with: base64 of the SHA-1 of the key
    /// and the GUID (the digest from OpenSSL, as every digest in Tollgate).
    static func acceptValue(for key: String) -> String {
        Data(MessageDigest.hash(.sha1, Array((key + guid).utf8))).base64EncodedString()
    }

    /// Adds the handshake's fields to a request's (replacing any the caller set for these names:
    /// an extension the task does not implement cannot be offered).
    func addFields(to fields: inout HeaderFields) {
        for name in ["Upgrade", "Connection", "Sec-WebSocket-Key", "Sec-WebSocket-Version", "Sec-WebSocket-Protocol", "Sec-WebSocket-Extensions"] {
            fields.remove(name)
        }
        fields.add(name: .upgrade, value: "websocket")
        fields.add(name: .connection, value: "Upgrade")
        fields.add(name: "Sec-WebSocket-Key", value: key)
        fields.add(name: "Sec-WebSocket-Version", value: "13")
        if !protocols.isEmpty { fields.add(name: "Sec-WebSocket-Protocol", value: protocols.joined(separator: ", ")) }
        if offersCompression { fields.add(name: "Sec-WebSocket-Extensions", value: PerMessageDeflate.offer) }
    }

    /// Checks a 101 (RFC 6455 §4.1, the client's checks): `Upgrade: websocket`, `Connection:
    /// Upgrade`, the accept value, an extension only as offered (permessage-deflate with
    /// parameters RFC 7692 allows), and a subprotocol only from those offered. Returns what was
    /// agreed, or what is wrong.
    func check(_ head: HTTPResponseHead) -> Result<Agreement, WebSocketHandshakeError> {
        let upgrade = FieldList.elements(head.headerFields.values(for: .upgrade))
        guard upgrade.contains(where: { $0.lowercased() == "websocket" }) else {
            return .failure(.init("the 101 does not upgrade to websocket (Upgrade: \(upgrade.joined(separator: ", ")))"))
        }
        let connection = FieldList.elements(head.headerFields.values(for: .connection))
        guard connection.contains(where: { $0.lowercased() == "upgrade" }) else {
            return .failure(.init("the 101 has no Connection: Upgrade"))
        }
        let accept = head.headerFields["Sec-WebSocket-Accept"]?.trimmingCharacters(in: .whitespaces)
        guard accept == Self.acceptValue(for: key) else {
            return .failure(.init("Sec-WebSocket-Accept \(accept.map { "\"\($0)\"" } ?? "missing") does not match the key sent"))
        }
        let extensions = head.headerFields.values(for: "Sec-WebSocket-Extensions")
        var compression: PerMessageDeflate?
        if !offersCompression {
            if !FieldList.elements(extensions).isEmpty {
                return .failure(.init("the server chose an extension that was not offered: \(extensions.joined(separator: ", "))"))
            }
        } else {
            switch PerMessageDeflate.accepted(extensions) {
            case .success(let agreed): compression = agreed
            case .failure(let problem): return .failure(problem)
            }
        }
        let chosen = FieldList.elements(head.headerFields.values(for: "Sec-WebSocket-Protocol")).map(String.init)
        switch chosen.count {
        case 0: return .success(Agreement(chosenProtocol: nil, compression: compression))
        case 1 where protocols.contains(chosen[0]): return .success(Agreement(chosenProtocol: chosen[0], compression: compression))
        default: return .failure(.init("the server chose a subprotocol that was not offered: \(chosen.joined(separator: ", "))"))
        }
    }
}

/// Why a 101 does not open a WebSocket connection.
struct WebSocketHandshakeError: Error, Equatable {
    var reason: String
    init(_ reason: String) { self.reason = reason }
}
