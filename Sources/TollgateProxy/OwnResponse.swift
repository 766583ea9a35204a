import NIOCore
import NIOHTTP1

/// A response the proxy makes itself (CONTRACT.md "Proxy responses of its own"): a status, the
/// `Tollgate-Error` code, and a one-line plain-text body saying what happened.
struct OwnResponse: Sendable {
    /// The status sent (usually the code's own; 501 for what this build does not support yet).
    var status: Int
    /// The stable code sent in `Tollgate-Error`.
    var code: ProxyErrorCode
    /// What happened, in one line (no secrets: it goes to the client as the body).
    var message: String

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
    func head(version: HTTPVersion, close: Bool) -> HTTPResponseHead {
        var headers = HTTPHeaders()
        headers.add(name: "Tollgate-Error", value: code.rawValue)
        headers.add(name: "Content-Type", value: "text/plain")
        headers.add(name: "Content-Length", value: String(body.readableBytes))
        if close { headers.add(name: "Connection", value: "close") }
        return HTTPResponseHead(version: version, status: HTTPResponseStatus(statusCode: status), headers: headers)
    }

    /// The whole response as bytes, for the one case where it must bypass the HTTP encoder
    /// (an answer to CONNECT, whose body NIO's encoder would drop).
    func wireBytes(version: HTTPVersion) -> ByteBuffer {
        let head = self.head(version: version, close: true)
        var buffer = ByteBuffer()
        buffer.writeString("HTTP/\(version.major).\(version.minor) \(head.status.code) \(head.status.reasonPhrase)\r\n")
        for (name, value) in head.headers { buffer.writeString("\(name): \(value)\r\n") }
        buffer.writeString("\r\n")
        var body = self.body
        buffer.writeBuffer(&body)
        return buffer
    }
}
