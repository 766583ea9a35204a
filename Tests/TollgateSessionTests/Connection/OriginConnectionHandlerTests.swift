import NIOCore
import NIOEmbedded
import Testing
import TollgateHTTP

@testable import TollgateSession

/// The origin connection's handler event by event on an EmbeddedChannel: the request it writes,
/// the response bytes the test feeds in, and what the exchange is told.
@Suite("The origin connection on an EmbeddedChannel (OriginConnectionHandler)")
struct OriginConnectionHandlerTests {
    /// An exchange that writes down what it is told, in order.
    final class RecordingSink: ExchangeSink, @unchecked Sendable {
        var events: [String] = []
        var failure: SessionError?

        func exchangeDidWriteRequestHead(bytes: Int) { events.append("wrote head") }
        func exchangeDidWriteBody(bytes: Int) { events.append("wrote body \(bytes)") }
        func exchangeDidFinishRequest() { events.append("request finished") }
        func exchangeDidReceiveInterim(_ head: HTTPResponseHead) { events.append("interim \(head.status)") }
        func exchangeDidReceiveHead(_ head: HTTPResponseHead) { events.append("head \(head.status)") }
        func exchangeDidReceiveBody(_ buffer: ByteBuffer) { events.append("body \(String(buffer: buffer))") }
        func exchangeDidReceiveEnd(reusable: Bool) { events.append("end reusable: \(reusable)") }
        func exchangeDidFail(_ error: SessionError, responseStarted: Bool) {
            failure = error
            events.append("failed, response started: \(responseStarted)")
        }

        /// The events after the request was written.
        var responseEvents: [String] { Array(events.drop { $0 == "wrote head" || $0.hasPrefix("wrote body") || $0 == "request finished" }) }
    }

    /// Counts the reads the handler asks the channel for (back-pressure).
    final class ReadCounter: ChannelOutboundHandler, @unchecked Sendable {
        typealias OutboundIn = ByteBuffer
        var reads = 0

        func read(context: ChannelHandlerContext) {
            reads += 1
            context.read()
        }
    }

    let channel = EmbeddedChannel()
    let handler = OriginConnectionHandler()
    let reads = ReadCounter()

    init() throws {
        try channel.pipeline.syncOperations.addHandler(reads)
        try channel.pipeline.syncOperations.addHandler(handler)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 80)).wait()
    }

    /// Starts an exchange for `GET http://origin.test/a` (with `fields`) and returns its sink and
    /// the request bytes written.
    func startExchange(_ fields: HeaderFields = [:], body: BodySource = .none) throws -> (RecordingSink, String) {
        let sink = RecordingSink()
        let head = HTTPRequestHead(method: .get, url: try HTTPURL.parse("http://origin.test/a"), headerFields: fields)
        let encoder = RequestHeadEncoder(
            head: head, bodyLength: body.knownLength, hasBody: body.knownLength != 0, viaProxy: false,
            allocator: channel.allocator
        )
        handler.startExchange(head: encoder, body: body, sink: sink)
        var written = ""
        while let bytes = try channel.readOutbound(as: ByteBuffer.self) { written += String(buffer: bytes) }
        return (sink, written)
    }

    @Test("The request is written, a response is decoded and handed over, and keep-alive leaves the connection for the next")
    func keepAlive() throws {
        let (sink, request) = try startExchange()
        #expect(request == "GET /a HTTP/1.1\r\nHost: origin.test\r\n\r\n")
        #expect(sink.events == ["wrote head", "request finished"])
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel"))
        try channel.writeInbound(ByteBuffer(string: "lo"))
        #expect(sink.responseEvents == ["head 200", "body hel", "body lo", "end reusable: true"])
        #expect(channel.isActive)

        let (next, _) = try startExchange()
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 204 No Content\r\n\r\n"))
        #expect(next.responseEvents == ["head 204", "end reusable: true"])
        #expect(channel.isActive)
    }

    @Test("A response that says Connection: close ends the connection after it")
    func close() throws {
        let (sink, _) = try startExchange()
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"))
        #expect(sink.responseEvents == ["head 200", "body ok", "end reusable: false"])
        #expect(!channel.isActive)
    }

    @Test("A request that asked to close is not reused even after a keep-alive response")
    func requestAskedToClose() throws {
        let (sink, request) = try startExchange(["Connection": "close"])
        #expect(request.contains("Connection: close\r\n"))
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
        #expect(sink.responseEvents == ["head 200", "end reusable: false"])
        #expect(!channel.isActive)
    }

    @Test("A response cut short by the close fails the exchange after what arrived; one that runs to the close ends there")
    func cutShort() throws {
        let (sink, _) = try startExchange()
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"))
        try channel.close().wait()
        #expect(sink.responseEvents == ["head 200", "body abc", "failed, response started: true"])
        #expect(sink.failure?.code == .networkConnectionLost)
        #expect(sink.failure?.detail.contains("closed before the response was complete") == true)
    }

    @Test("A body without framing runs to the close and ends there, not reusable")
    func runsToClose() throws {
        let (sink, _) = try startExchange()
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 200 OK\r\n\r\nall of it"))
        try channel.close().wait()
        #expect(sink.responseEvents == ["head 200", "body all of it", "end reusable: false"])
    }

    @Test("Interim responses are handed over apart, before the final one")
    func interim() throws {
        let (sink, _) = try startExchange()
        try channel.writeInbound(
            ByteBuffer(string: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\n")
        )
        #expect(sink.responseEvents == ["interim 100", "interim 103"])
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
        #expect(sink.responseEvents == ["interim 100", "interim 103", "head 200", "end reusable: true"])
        #expect(channel.isActive)
    }

    @Test("Bytes after the response mean the server sent more than asked: the connection is not reused")
    func bytesAfterTheResponse() throws {
        let (sink, _) = try startExchange()
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA"))
        #expect(sink.responseEvents == ["head 200", "body ok", "end reusable: false"])
        #expect(!channel.isActive)
    }

    @Test("Bytes with no request outstanding close the connection")
    func bytesWhileIdle() throws {
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 200 OK\r\n\r\n"))
        #expect(!channel.isActive)
    }

    @Test("A response that cannot be read fails the exchange as a bad server response, in the framing core's words")
    func invalidResponse() throws {
        let (sink, _) = try startExchange()
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXY"))
        #expect(sink.responseEvents == ["head 200", "body hello", "failed, response started: true"])
        #expect(sink.failure?.code == .badServerResponse)
        #expect(sink.failure?.detail == "invalid HTTP response: chunk data is not followed by a line end")
        #expect(!channel.isActive)
    }

    @Test("Reading stops while the exchange wants no bytes and starts again when it does")
    func readDemand() throws {
        let (sink, _) = try startExchange()
        let before = reads.reads
        handler.setReadDemand(false)
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nab"))
        #expect(reads.reads == before, "no read asked for after the bytes that were in flight")
        handler.setReadDemand(true)
        #expect(reads.reads == before + 1)
        try channel.writeInbound(ByteBuffer(string: "cd"))
        #expect(sink.responseEvents == ["head 200", "body ab", "body cd", "end reusable: true"])
    }

    @Test("A request body of known length is written after the head")
    func requestBody() throws {
        let (sink, request) = try startExchange(body: .bytes(ByteBuffer(string: "payload")))
        #expect(request == "GET /a HTTP/1.1\r\nHost: origin.test\r\nContent-Length: 7\r\n\r\npayload")
        #expect(sink.events == ["wrote head", "wrote body 7", "request finished"])
    }
}
