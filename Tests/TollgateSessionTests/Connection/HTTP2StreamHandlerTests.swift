import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import Testing
import TollgateHTTP

@testable import TollgateSession

/// One HTTP/2 stream's exchange on an EmbeddedChannel standing for the stream channel: the frames
/// the handler writes, the frames the test feeds in, and what the exchange is told.
@Suite("An HTTP/2 stream's exchange on an EmbeddedChannel (HTTP2StreamHandler)")
struct HTTP2StreamHandlerTests {
    typealias RecordingSink = OriginConnectionHandlerTests.RecordingSink

    /// Counts the reads the handler asks for (back-pressure).
    final class ReadCounter: ChannelOutboundHandler, @unchecked Sendable {
        typealias OutboundIn = HTTP2Frame.FramePayload
        var reads = 0

        func read(context: ChannelHandlerContext) {
            reads += 1
            context.read()
        }
    }

    let channel = EmbeddedChannel()
    let reads = ReadCounter()

    func start(method: HTTPMethod = .get, body: BodySource = .none) throws -> (RecordingSink, HTTP2StreamHandler) {
        var fields = HeaderFields()
        fields.add(name: "Host", value: "origin.test")
        fields.add(name: "Connection", value: "keep-alive")
        fields.add(name: "Accept", value: "text/plain")
        let head = HTTPRequestHead(method: method, url: try HTTPURL.parse("https://origin.test/a?b=c"), headerFields: fields)
        let sink = RecordingSink()
        let handler = HTTP2StreamHandler(head: head, body: body, sink: sink)
        try channel.pipeline.syncOperations.addHandler(reads)
        try channel.pipeline.syncOperations.addHandler(handler)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
        return (sink, handler)
    }

    func written() throws -> [HTTP2Frame.FramePayload] {
        var frames: [HTTP2Frame.FramePayload] = []
        while let frame = try channel.readOutbound(as: HTTP2Frame.FramePayload.self) { frames.append(frame) }
        return frames
    }

    static func headers(_ pairs: [(String, String)], end: Bool = false) -> HTTP2Frame.FramePayload {
        .headers(.init(headers: HPACKHeaders(pairs), endStream: end))
    }

    @Test("A GET is one HEADERS frame with END_STREAM; the response's HEADERS, DATA and END_STREAM reach the sink in order")
    func getExchange() throws {
        let (sink, _) = try start()
        let frames = try written()
        #expect(frames.count == 1)
        guard case .headers(let request) = frames.first else {
            Issue.record("no HEADERS: \(frames)")
            return
        }
        #expect(request.endStream)
        #expect(request.headers.map { "\($0.name)=\($0.value)" }
            == [":method=GET", ":scheme=https", ":authority=origin.test", ":path=/a?b=c", "accept=text/plain"])
        try channel.writeInbound(Self.headers([(":status", "100")]))
        try channel.writeInbound(Self.headers([(":status", "200"), ("content-type", "text/plain")]))
        try channel.writeInbound(HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(ByteBuffer(string: "hel")))))
        try channel.writeInbound(HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(ByteBuffer(string: "lo")), endStream: true)))
        #expect(sink.responseEvents == ["interim 100", "head 200", "body hel", "body lo", "end reusable: true"])
    }

    @Test("A body in memory follows the HEADERS as DATA with END_STREAM")
    func postBody() throws {
        let (sink, _) = try start(method: .post, body: .bytes(ByteBuffer(string: "payload")))
        let frames = try written()
        guard frames.count == 2, case .headers(let head) = frames[0], case .data(let data) = frames[1] else {
            Issue.record("frames: \(frames)")
            return
        }
        #expect(!head.endStream)
        #expect(data.endStream)
        guard case .byteBuffer(let bytes) = data.data else {
            Issue.record("not bytes")
            return
        }
        #expect(String(buffer: bytes) == "payload")
        #expect(sink.events.prefix(3) == ["wrote head", "wrote body 7", "request finished"])
    }

    @Test("Without read demand the handler asks for no more frames; with demand again it reads")
    func backPressure() throws {
        let (sink, handler) = try start()
        _ = try written()
        try channel.writeInbound(Self.headers([(":status", "200")]))
        let before = reads.reads
        handler.setReadDemand(false)
        channel.pipeline.fireChannelReadComplete()
        #expect(reads.reads == before)
        handler.setReadDemand(true)
        #expect(reads.reads == before + 1)
        #expect(sink.responseEvents == ["head 200"])
    }

    @Test("RST_STREAM before the head fails the exchange as not started (it may be sent again); the close after it says nothing more")
    func reset() throws {
        let (sink, _) = try start()
        _ = try written()
        try channel.writeInbound(HTTP2Frame.FramePayload.rstStream(.refusedStream))
        #expect(sink.responseEvents == ["failed, response started: false"])
        #expect(sink.failure?.code == .networkConnectionLost)
        #expect(sink.failure?.description.contains("REFUSED_STREAM") == true)
        _ = try? channel.finish()
        #expect(sink.responseEvents.count == 1)
    }

    @Test("The stream closing mid-body fails the exchange as started")
    func closedMidBody() throws {
        let (sink, _) = try start()
        _ = try written()
        try channel.writeInbound(Self.headers([(":status", "200")]))
        try channel.writeInbound(HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(ByteBuffer(string: "part")))))
        _ = try? channel.finish()
        #expect(sink.responseEvents == ["head 200", "body part", "failed, response started: true"])
    }
}
