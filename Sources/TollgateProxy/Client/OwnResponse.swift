import NIOCore
import TollgateHTTP

/// A response the proxy makes itself (CONTRACT.md "Proxy responses of its own"): a status, the
/// `Tollgate-Error` code, and a one-line plain-text body saying what happened.
struct OwnResponse: Sendable {
    /// The status sent (usually the code's own).
    var status: Int
    /// The stable code sent in `Tollgate-Error`.
    var code: ProxyErrorCode
    /// What happened, in one line (no secrets: it goes to the client as the body).
    let message: String
    /// The body: the message on one line (see ``oneLine(_:)``), made once — the head's length,
    /// the write and the access log all read it.
    let body: ByteBuffer
    /// Header fields besides the standard ones (`Proxy-Authenticate` on a 407).
    var extraFields: HeaderFields = [:]

    init(_ code: ProxyErrorCode, status: Int? = nil, _ message: String) {
        self.code = code
        self.status = status ?? code.status
        self.message = message
        self.body = Self.oneLine(message)
    }

    /// `message` and a newline, each run of CR and LF inside it a single space (none at either
    /// end). Bytes, not Characters: "\r\n" is one Character, equal to neither "\r" nor "\n".
    static func oneLine(_ message: String) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(message.utf8.count + 1)
        var spacePending = false
        for byte in message.utf8 {
            if byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r") {
                spacePending = buffer.readableBytes > 0
                continue
            }
            if spacePending {
                buffer.writeInteger(UInt8(ascii: " "))
                spacePending = false
            }
            buffer.writeInteger(byte)
        }
        buffer.writeInteger(UInt8(ascii: "\n"))
        return buffer
    }

    /// The head, with the body's length; `close` adds `Connection: close`.
    func head(minorVersion: Int, close: Bool) -> HTTPResponseHead {
        var fields: HeaderFields = [
            "Tollgate-Error": code.rawValue, "Content-Type": "text/plain",
            "Content-Length": String(body.readableBytes),
        ]
        for field in extraFields { fields.add(name: field.name, value: field.value) }
        if close { fields.add(name: .connection, value: "close") }
        return HTTPResponseHead(status: status, version: "HTTP/1.\(minorVersion)", headerFields: fields)
    }
}
