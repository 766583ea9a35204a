import TollgateHTTP

/// The permessage-deflate extension of a WebSocket connection (RFC 7692): what the client
/// offers, and what the server's 101 agreed to. Pure: the compression itself is
/// ``PerMessageDeflateHandler``'s.
struct PerMessageDeflate: Equatable, Sendable {
    /// `server_no_context_takeover`: the server starts each message's compression afresh.
    var serverNoContextTakeover = false
    /// `client_no_context_takeover`: the client must start each message's compression afresh.
    var clientNoContextTakeover = false
    /// `server_max_window_bits` (8–15): the server's window; nil when it did not say (15).
    var serverMaxWindowBits: Int?
    /// `client_max_window_bits` (8–15): the largest window the client may compress with; nil: 15.
    var clientMaxWindowBits: Int?

    /// The extension's name.
    static let name = "permessage-deflate"

    /// The offer: the extension with `client_max_window_bits` (so the server may ask for a smaller
    /// window), and nothing else asked of the server — the offer browsers make.
    static let offer = "permessage-deflate; client_max_window_bits"

    /// The window the client compresses with: what the server allowed, but at least 9 (zlib's
    /// raw deflate has no 256-byte window; a server asking for 8 gets 9, as zlib gives everyone).
    var clientWindowBits: Int { max(9, clientMaxWindowBits ?? 15) }

    /// Reads the `Sec-WebSocket-Extensions` of a 101 answering ``offer``: nil when the server
    /// accepted no extension; the parameters it agreed to; or why the answer is not one the offer
    /// allows (another extension, the extension twice, an unknown or repeated parameter, a window
    /// outside 8–15) — RFC 7692 §5: the client must then fail the connection.
    static func accepted(_ values: [String]) -> Result<PerMessageDeflate?, WebSocketHandshakeError> {
        let extensions = FieldList.elements(values)
        guard !extensions.isEmpty else { return .success(nil) }
        guard extensions.count == 1 else {
            return .failure(.init("the server chose more than the one extension offered: \(extensions.joined(separator: ", "))"))
        }
        let parts = extensions[0].split(separator: ";").map { String($0).trimmingASCIIWhitespace() }
        guard parts.first?.lowercased() == name else {
            return .failure(.init("the server chose an extension that was not offered: \(extensions[0])"))
        }
        var agreed = PerMessageDeflate()
        var seen: Set<String> = []
        for parameter in parts.dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1).map { String($0).trimmingASCIIWhitespace() }
            let key = pair[0].lowercased()
            var value = pair.count > 1 ? pair[1] : nil
            if let quoted = value, quoted.count >= 2, quoted.hasPrefix("\""), quoted.hasSuffix("\"") {
                value = String(quoted.dropFirst().dropLast())
            }
            guard seen.insert(key).inserted else { return .failure(.init("permessage-deflate: \(key) given twice")) }
            switch key {
            case "server_no_context_takeover" where value == nil:
                agreed.serverNoContextTakeover = true
            case "client_no_context_takeover" where value == nil:
                agreed.clientNoContextTakeover = true
            case "server_max_window_bits", "client_max_window_bits":
                guard let value, let bits = Int(value), (8...15).contains(bits), value.allSatisfy(\.isNumber) else {
                    return .failure(.init("permessage-deflate: \(parameter) is not a window of 8 to 15 bits"))
                }
                if key == "server_max_window_bits" { agreed.serverMaxWindowBits = bits } else { agreed.clientMaxWindowBits = bits }
            default:
                return .failure(.init("permessage-deflate: the parameter \(parameter) was not offered"))
            }
        }
        return .success(agreed)
    }
}
