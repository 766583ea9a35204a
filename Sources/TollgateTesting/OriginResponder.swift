public import NIOCore
public import TollgateHTTP

/// Writes the answer to one request of a ``LoopbackOrigin``: a whole response, a response in
/// pieces over time, raw bytes, or a closed connection.
public struct OriginResponder: Sendable {
    /// The connection.
    public let channel: any Channel
    /// Whether the request was HEAD (no body is written then).
    public let isHead: Bool

    /// The connection's event loop (schedule delayed pieces on it).
    public var eventLoop: any EventLoop { channel.eventLoop }

    /// A complete response with Content-Length (unless `headers` says chunked or sets its own).
    public func send(status: Int, headers: HeaderFields = [:], body: String = "") {
        send(status: status, headers: headers, bytes: Array(body.utf8))
    }

    /// A complete response with a binary body.
    public func send(status: Int, headers: HeaderFields = [:], bytes: [UInt8]) {
        var headers = headers
        let chunked = headers[.transferEncoding]?.lowercased() == "chunked"
        if !chunked && !headers.contains(.contentLength) && status != 204 && status != 304 && status >= 200 {
            headers.add(name: .contentLength, value: String(bytes.count))
        }
        var buffer = ByteBuffer(string: Self.head(status: status, headers: headers))
        if !isHead && !bytes.isEmpty {
            if chunked {
                buffer.writeString(String(bytes.count, radix: 16) + "\r\n")
                buffer.writeBytes(bytes)
                buffer.writeString("\r\n0\r\n\r\n")
            } else {
                buffer.writeBytes(bytes)
            }
        } else if chunked && !isHead {
            buffer.writeString("0\r\n\r\n")
        }
        channel.writeAndFlush(buffer, promise: nil)
    }

    /// Only the head; follow with ``write(_:)`` / ``writeChunk(_:)`` and ``end(chunked:)``.
    public func sendHead(status: Int, headers: HeaderFields) {
        channel.writeAndFlush(ByteBuffer(string: Self.head(status: status, headers: headers)), promise: nil)
    }

    /// Raw bytes as they are.
    public func write(_ text: String) { write(Array(text.utf8)) }

    /// Raw bytes as they are.
    public func write(_ bytes: [UInt8]) {
        channel.writeAndFlush(ByteBuffer(bytes: bytes), promise: nil)
    }

    /// Raw bytes; the future completes when the kernel took them (for flow-control tests).
    public func writeWithFuture(_ bytes: [UInt8]) -> EventLoopFuture<Void> {
        channel.writeAndFlush(ByteBuffer(bytes: bytes))
    }

    /// One chunk of a chunked body.
    public func writeChunk(_ text: String) {
        let bytes = Array(text.utf8)
        var buffer = ByteBuffer(string: String(bytes.count, radix: 16) + "\r\n")
        buffer.writeBytes(bytes)
        buffer.writeString("\r\n")
        channel.writeAndFlush(buffer, promise: nil)
    }

    /// Ends a chunked body.
    public func endChunked() { write("0\r\n\r\n") }

    /// From now on the connection echoes raw bytes (a stand-in for a WebSocket after its 101).
    public func echoRawBytes() {
        if let handler = try? channel.pipeline.syncOperations.handler(type: OriginConnectionScriptHandler.self) {
            handler.echoesRawBytes = true
        }
    }

    /// Closes the connection.
    public func close() { channel.close(promise: nil) }

    /// Runs `body` after `delay` on the connection's event loop.
    public func after(_ delay: TimeAmount, _ body: @escaping @Sendable () -> Void) {
        channel.eventLoop.scheduleTask(in: delay, body)
    }

    static func head(status: Int, headers: HeaderFields) -> String {
        var text = "HTTP/1.1 \(status) \(HTTPResponseHead.standardReason(for: status))\r\n"
        for field in headers { text += "\(field.name): \(field.value)\r\n" }
        return text + "\r\n"
    }
}
