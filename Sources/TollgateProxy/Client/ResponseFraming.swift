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
    /// framing is announced in `added` (the fields the proxy adds) when used. `bodyLength` is set
    /// to the Content-Length read for `.contentLength` framing, else nil (read once: the writer
    /// sizes its buffer by it).
    static func decide(
        status: Int,
        fields: inout HeaderFields,
        added: inout HeaderFields,
        requestIsHead: Bool,
        clientMinorVersion: Int,
        bodyLength: inout Int64?
    ) -> ResponseFraming {
        bodyLength = nil
        fields.remove(.transferEncoding)
        if (100..<200).contains(status) || status == 204 {
            fields.remove(.contentLength)
            return .none
        }
        if status == 304 || requestIsHead { return .none }
        if let length = fields.contentLength {
            bodyLength = length
            return .contentLength
        }
        fields.remove(.contentLength)
        if clientMinorVersion >= 1 {
            added.add(name: .transferEncoding, value: "chunked")
            return .chunked
        }
        return .untilClose
    }
}

/// Writes response heads and bodies as bytes.
enum ResponseEncoder {
    /// `HTTP/1.x STATUS REASON`, the fields but those `omission` names (hop-by-hop ones, left
    /// out here rather than removed from a copy), then `extra` (fields the proxy adds, written
    /// after the message's own without copying its list), the empty line.
    static func head(
        _ head: HTTPResponseHead,
        adding extra: HeaderFields = HeaderFields(),
        omitting omission: HopByHopHeaders.Omission? = nil,
        minorVersion: Int,
        into buffer: inout ByteBuffer
    ) {
        func omits(_ line: HeaderFields.Line) -> Bool { omission?.omits(line) ?? false }
        // Sized once and written in one pass: this runs for every response.
        var reason = head.reason.isEmpty ? HTTPResponseHead.standardReason(for: head.status) : head.reason
        // Three digits as a rule; anything else is written as it is (never produced by a parser).
        var statusText = (100...999).contains(head.status) ? "" : String(head.status)
        let size = 13 + statusText.utf8.count + reason.utf8.count + 2 + head.headerFields.wireSize(omitting: omits)
            + extra.wireSize + 2
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: size) { destination in
            var offset = 0
            func put(_ byte: UInt8) {
                destination[offset] = byte
                offset += 1
            }
            for byte in (minorVersion == 0 ? "HTTP/1.0 " : "HTTP/1.1 ").utf8 { put(byte) }
            if statusText.isEmpty {
                put(UInt8(0x30 + head.status / 100))
                put(UInt8(0x30 + head.status / 10 % 10))
                put(UInt8(0x30 + head.status % 10))
            } else {
                statusText.withUTF8 { bytes in
                    for byte in bytes { put(byte) }
                }
            }
            put(UInt8(ascii: " "))
            reason.withUTF8 { bytes in
                for byte in bytes { put(byte) }
            }
            put(UInt8(ascii: "\r"))
            put(UInt8(ascii: "\n"))
            offset += head.headerFields.writeWire(
                to: UnsafeMutableRawBufferPointer(rebasing: destination[offset...]),
                omitting: omits
            )
            offset += extra.writeWire(to: UnsafeMutableRawBufferPointer(rebasing: destination[offset...]))
            put(UInt8(ascii: "\r"))
            put(UInt8(ascii: "\n"))
            return offset
        }
    }

    /// The line before a chunk of `count` bytes.
    static func chunkHeader(_ count: Int, into buffer: inout ByteBuffer) {
        buffer.writeString(String(count, radix: 16))
        buffer.writeStaticString("\r\n")
    }
}
