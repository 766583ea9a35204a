/// A WebSocket close code (RFC 6455 §7.4), as `URLSessionWebSocketTask.CloseCode`: the seeds'
/// codes as constants, and any other code a peer may send (3000–4999 for applications).
public struct WebSocketCloseCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int

    public init(rawValue: Int) { self.rawValue = rawValue }

    /// The connection is still open (or never opened): no close code yet.
    public static let invalid = WebSocketCloseCode(rawValue: 0)
    /// 1000: the purpose of the connection was fulfilled.
    public static let normalClosure = WebSocketCloseCode(rawValue: 1000)
    /// 1001: the endpoint is going away (a server going down, a page navigated away).
    public static let goingAway = WebSocketCloseCode(rawValue: 1001)
    /// 1002: a protocol error.
    public static let protocolError = WebSocketCloseCode(rawValue: 1002)
    /// 1003: a kind of data the endpoint cannot accept (binary to a text-only endpoint).
    public static let unsupportedData = WebSocketCloseCode(rawValue: 1003)
    /// 1005: the close frame carried no code (never sent on the wire).
    public static let noStatusReceived = WebSocketCloseCode(rawValue: 1005)
    /// 1006: the connection closed without a close frame (never sent on the wire).
    public static let abnormalClosure = WebSocketCloseCode(rawValue: 1006)
    /// 1007: data inconsistent with the message's type (text that is not UTF-8).
    public static let invalidFramePayloadData = WebSocketCloseCode(rawValue: 1007)
    /// 1008: a message that violates the endpoint's policy.
    public static let policyViolation = WebSocketCloseCode(rawValue: 1008)
    /// 1009: a message too big to process.
    public static let messageTooBig = WebSocketCloseCode(rawValue: 1009)
    /// 1010: the client needed an extension the server did not negotiate.
    public static let mandatoryExtensionMissing = WebSocketCloseCode(rawValue: 1010)
    /// 1011: the server met an unexpected condition.
    public static let internalServerError = WebSocketCloseCode(rawValue: 1011)
    /// 1015: the TLS handshake failed (never sent on the wire).
    public static let tlsHandshakeFailure = WebSocketCloseCode(rawValue: 1015)

    /// Whether the code may appear in a close frame (RFC 6455 §7.4 and the IANA registry):
    /// 1000–1003, 1007–1014 and 3000–4999. 1005, 1006 and 1015 only describe a closure.
    public var isAllowedOnTheWire: Bool {
        switch rawValue {
        case 1000...1003, 1007...1014, 3000...4999: true
        default: false
        }
    }

    public var description: String { String(rawValue) }
}
