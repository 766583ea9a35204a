import NIOCore
import TollgateHTTP

/// How a response body is delimited on the client connection (RFC 9112 §6.3).
enum ResponseFraming: Hashable, Sendable {
    /// No body: an interim response, 204, 304, or the answer to HEAD.
    case none
    /// `Content-Length` says where it ends.
    case contentLength
    /// `Transfer-Encoding: chunked`, added by the proxy.
    case chunked
    /// The end of the body is the end of the connection (HTTP/1.0 clients, unknown length).
    case untilClose

    /// The framing of `response` for a client that sent `method` over HTTP/1.`minorVersion`, with
    /// `fields` made to match: a `Transfer-Encoding` from upstream is replaced (it described the
    /// upstream connection), `Content-Length` is dropped where no body may follow, and chunked
    /// framing is announced when used.
    static func decide(
        status: Int,
        fields: inout HeaderFields,
        requestIsHead: Bool,
        clientMinorVersion: Int
    ) -> ResponseFraming {
        fields.remove("Transfer-Encoding")
        if (100..<200).contains(status) || status == 204 {
            fields.remove("Content-Length")
            return .none
        }
        if status == 304 || requestIsHead { return .none }
        let lengths = fields.values(for: "Content-Length")
        if let first = lengths.first, lengths.allSatisfy({ $0 == first }), Int64(first).map({ $0 >= 0 }) == true {
            return .contentLength
        }
        fields.remove("Content-Length")
        if clientMinorVersion >= 1 {
            fields.add(name: "Transfer-Encoding", value: "chunked")
            return .chunked
        }
        return .untilClose
    }
}

/// Writes response heads and bodies as bytes.
enum ResponseEncoder {
    /// `HTTP/1.x STATUS REASON`, the fields, the empty line.
    static func head(_ head: HTTPResponseHead, minorVersion: Int, into buffer: inout ByteBuffer) {
        // Written byte by byte: this runs for every response, and interpolation allocates.
        buffer.writeStaticString(minorVersion == 0 ? "HTTP/1.0 " : "HTTP/1.1 ")
        if (100...999).contains(head.status) {
            buffer.writeMultipleIntegers(
                UInt8(0x30 + head.status / 100), UInt8(0x30 + head.status / 10 % 10), UInt8(0x30 + head.status % 10),
                UInt8(ascii: " ")
            )
        } else {
            buffer.writeString("\(head.status) ")
        }
        buffer.writeString(head.reason.isEmpty ? HTTPResponseHead.standardReason(for: head.status) : head.reason)
        buffer.writeStaticString("\r\n")
        head.headerFields.withLines { lines in
            for index in lines.indices {
                buffer.writeString(lines[index].name)
                buffer.writeStaticString(": ")
                buffer.writeString(lines[index].value)
                buffer.writeStaticString("\r\n")
            }
        }
        buffer.writeStaticString("\r\n")
    }

    /// The line before a chunk of `count` bytes.
    static func chunkHeader(_ count: Int, into buffer: inout ByteBuffer) {
        buffer.writeString(String(count, radix: 16))
        buffer.writeStaticString("\r\n")
    }
}
