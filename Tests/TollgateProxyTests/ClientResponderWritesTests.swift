import NIOCore
import NIOEmbedded
import Testing
import TollgateHTTP

@testable import TollgateProxy

/// What the connection writes for what an exchange sends through its ``ClientResponder``,
/// buffer by buffer on an EmbeddedChannel: framing, the head coalesced with a small body, interim
/// responses.
@Suite("The client connection's response writes, on an EmbeddedChannel")
struct ClientResponderWritesTests {
    /// A connection serving one GET, with its exchange.
    private static func serving() throws -> (EmbeddedClientConnection, ScriptedExchange) {
        let connection = try EmbeddedClientConnection()
        try connection.send("GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n")
        return (connection, connection.exchanges[0])
    }

    /// The buffers written so far, each as text.
    private static func buffers(_ connection: EmbeddedClientConnection) throws -> [String] {
        connection.channel.embeddedEventLoop.run()
        var buffers: [String] = []
        while let buffer = try connection.channel.readOutbound(as: ByteBuffer.self) { buffers.append(String(buffer: buffer)) }
        return buffers
    }

    private static func sendHead(_ exchange: ScriptedExchange, framing: ResponseFraming, length: Int?) {
        var added = exchange.responder.takeAddedFields()
        var fields = HeaderFields()
        if let length { fields.add(name: .contentLength, value: String(length)) }
        exchange.responder.sendHead(
            HTTPResponseHead(status: 200, headerFields: fields), adding: &added, framing: framing,
            bodyLength: length.map(Int64.init), close: false
        )
    }

    @Test("A small body of known length leaves in one buffer with its head")
    func smallBodyCoalescedWithHead() throws {
        let (connection, exchange) = try Self.serving()
        Self.sendHead(exchange, framing: .contentLength, length: 5)
        #expect(try Self.buffers(connection).isEmpty, "the head waits for the body")
        exchange.responder.sendBody(ByteBuffer(string: "hello"))
        exchange.responder.sendEnd()
        let buffers = try Self.buffers(connection)
        #expect(buffers.count == 1)
        #expect(buffers.first?.hasPrefix("HTTP/1.1 200 OK\r\n") == true)
        #expect(buffers.first?.hasSuffix("\r\n\r\nhello") == true)
    }

    @Test("A body piece over 16 KiB goes in its own buffer after the head")
    func largeBodyAfterTheHead() throws {
        let (connection, exchange) = try Self.serving()
        let size = ResponseWriter.coalescedBodyLimit + 1
        Self.sendHead(exchange, framing: .contentLength, length: size)
        exchange.responder.sendBody(ByteBuffer(repeating: UInt8(ascii: "x"), count: size))
        exchange.responder.sendEnd()
        let buffers = try Self.buffers(connection)
        #expect(buffers.count == 2)
        #expect(buffers.first?.hasSuffix("\r\n\r\n") == true)
        #expect(buffers.last?.count == size)
    }

    @Test("A chunked body is written as chunks and a last chunk")
    func chunkedBody() throws {
        let (connection, exchange) = try Self.serving()
        Self.sendHead(exchange, framing: .chunked, length: nil)
        exchange.responder.sendBody(ByteBuffer(string: "abc"))
        exchange.responder.sendBody(ByteBuffer(string: "de"))
        exchange.responder.sendEnd()
        let text = try Self.buffers(connection).joined()
        #expect(text.hasSuffix("\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"))
        #expect(connection.isOpen)
    }

    @Test("A body until close makes the response say Connection: close, and the connection closes after it")
    func untilCloseClosesAfter() throws {
        let (connection, exchange) = try Self.serving()
        Self.sendHead(exchange, framing: .untilClose, length: nil)
        exchange.responder.sendBody(ByteBuffer(string: "stream"))
        exchange.responder.sendEnd()
        let text = try Self.buffers(connection).joined()
        #expect(text.contains("Connection: close\r\n"))
        #expect(text.hasSuffix("stream"))
        #expect(!connection.isOpen)
    }

    @Test("An interim response goes out before the final one, which the same exchange then sends")
    func interimThenFinal() throws {
        let (connection, exchange) = try Self.serving()
        exchange.responder.sendInterim(HTTPResponseHead(status: 100))
        exchange.answer("done")
        let responses = try connection.responses()
        #expect(responses.map(\.status) == [100, 200])
    }

    @Test("File regions are taken only for a length-framed body")
    func fileRegionsOnlyForLengthFramedBodies() throws {
        let (_, exchange) = try Self.serving()
        Self.sendHead(exchange, framing: .chunked, length: nil)
        #expect(!exchange.responder.acceptsFileRegion)
        let (_, framed) = try Self.serving()
        Self.sendHead(framed, framing: .contentLength, length: 10)
        #expect(framed.responder.acceptsFileRegion)
    }

    @Test("Aborting a response sends what was held and closes the connection")
    func abortCloses() throws {
        let (connection, exchange) = try Self.serving()
        Self.sendHead(exchange, framing: .contentLength, length: 10)
        exchange.responder.abort()
        let buffers = try Self.buffers(connection)
        #expect(buffers.first?.hasPrefix("HTTP/1.1 200") == true, "the head held for the body went out first")
        #expect(!connection.isOpen)
    }
}
