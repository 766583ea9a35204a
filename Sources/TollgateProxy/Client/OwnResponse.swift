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
    var message: String
    /// Header fields besides the standard ones (`Proxy-Authenticate` on a 407).
    var extraFields: HeaderFields = [:]

    init(_ code: ProxyErrorCode, status: Int? = nil, _ message: String) {
        self.code = code
        self.status = status ?? code.status
        self.message = message
    }

    /// The body: the message on one line, newlines inside it flattened.
    var body: ByteBuffer {
        let line = message.split(whereSeparator: { $0 == "\n" || $0 == "\r" }).joined(separator: " ")
        return ByteBuffer(string: line + "\n")
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
