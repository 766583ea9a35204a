import NIOCore
import TollgateHTTP

/// The bytes of a request head as an origin connection sends it, and how its body is framed.
struct RequestHeadEncoder {
    /// How the body after the head is written.
    enum BodyFraming: Equatable {
        /// As it is: no body, or one whose length the head announces.
        case plain
        /// In chunks (`Transfer-Encoding: chunked`, its length unknown when the head is sent).
        case chunked
    }

    /// The encoded head (`METHOD target HTTP/1.1`, the fields, the empty line).
    var bytes: ByteBuffer
    var framing: BodyFraming
    /// Whether the request is a HEAD (its response has no body, whatever its fields say).
    var isHead: Bool
    /// Whether the request lets the connection carry another one (no `Connection: close`).
    var keepAlive: Bool
    /// The head encoded (an HTTP/2 stream sends it as a header block instead of ``bytes``).
    var head: HTTPRequestHead

    /// Encodes `head` for the wire: origin-form, or absolute-form through a proxy; `Host` first
    /// when the request has none; `Content-Length` or `Transfer-Encoding: chunked` added for a
    /// body that has neither, and `Content-Length: 0` for a POST, PUT or PATCH without one
    /// (RFC 9110 §8.6).
    init(
        head: HTTPRequestHead,
        bodyLength: Int64?,
        hasBody: Bool,
        viaProxy: Bool,
        allocator: ByteBufferAllocator
    ) {
        self.head = head
        let fields = head.headerFields
        isHead = head.method == .head
        keepAlive = !fields.listContains(.connection, token: "close")
        var after: (name: String, value: String)?
        // Host first when the request has none: written from the URL's parts, no string made.
        let hostLine = fields.contains(.host) ? nil : (host: head.url.hostForURL, port: head.url.shownPort)
        let hasLength = fields.contains(.contentLength)
        let hasCoding = fields.contains(.transferEncoding)
        if hasBody {
            if !hasLength && !hasCoding {
                after = bodyLength.map { ("Content-Length", String($0)) } ?? ("Transfer-Encoding", "chunked")
            }
        } else if !hasLength, head.method == .post || head.method == .put || head.method == .patch {
            after = ("Content-Length", "0")
        }
        if let after, after.name == "Transfer-Encoding" {
            framing = .chunked
        } else if hasCoding {
            let codings = FieldList.elements(fields.values(for: .transferEncoding))
            framing = codings.last?.lowercased() == "chunked" ? .chunked : .plain
        } else {
            framing = .plain
        }

        let method = head.method.rawValue
        let target = viaProxy ? head.url.absoluteString : head.url.pathAndQuery
        func lineSize(_ field: (name: String, value: String)?) -> Int {
            field.map { $0.name.utf8.count + $0.value.utf8.count + 4 } ?? 0
        }
        let hostLineSize = hostLine.map { 6 + $0.host.utf8.count + ($0.port == nil ? 0 : 21) + 2 } ?? 0
        let size = method.utf8.count + target.utf8.count + 12 + hostLineSize + fields.wireSize
            + lineSize(after) + 2
        var buffer = allocator.buffer(capacity: size)
        buffer.writeString(method)
        buffer.writeInteger(UInt8(ascii: " "))
        buffer.writeString(target)
        buffer.writeStaticString(" HTTP/1.1\r\n")
        func writeLine(_ field: (name: String, value: String)?) {
            guard let field else { return }
            buffer.writeString(field.name)
            buffer.writeStaticString(": ")
            buffer.writeString(field.value)
            buffer.writeStaticString("\r\n")
        }
        if let hostLine {
            buffer.writeStaticString("Host: ")
            buffer.writeString(hostLine.host)
            if let port = hostLine.port {
                buffer.writeInteger(UInt8(ascii: ":"))
                buffer.writeString(String(port))
            }
            buffer.writeStaticString("\r\n")
        }
        let fieldBytes = fields.wireSize
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: fieldBytes) { fields.writeWire(to: $0) }
        writeLine(after)
        buffer.writeStaticString("\r\n")
        bytes = buffer
    }

}
