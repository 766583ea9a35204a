import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import Testing

@testable import TollgateProxy

/// Records the events and bytes ``HTTP2StreamBytes`` passes up.
private final class Upper: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    var bytes = ""
    var inputClosed = 0

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        bytes += String(buffer: unwrapInboundIn(data))
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event { inputClosed += 1 }
    }
}

/// Counts the reads that reach the stream channel.
private final class FrameReads: ChannelOutboundHandler {
    typealias OutboundIn = HTTP2Frame.FramePayload
    var reads = 0

    func read(context: ChannelHandlerContext) {
        reads += 1
        context.read()
    }
}

@Suite("HTTP2StreamBytes: an HTTP/2 stream as a byte stream, on an EmbeddedChannel")
struct HTTP2StreamBytesTests {
    private func channel() throws -> (EmbeddedChannel, Upper, FrameReads) {
        let channel = EmbeddedChannel()
        let upper = Upper()
        let reads = FrameReads()
        try channel.pipeline.syncOperations.addHandler(reads)
        try channel.pipeline.syncOperations.addHandler(HTTP2StreamBytes())
        try channel.pipeline.syncOperations.addHandler(upper)
        return (channel, upper, reads)
    }

    @Test("DATA payloads come up as bytes; END_STREAM (on DATA or trailers) is one inputClosed")
    func inbound() throws {
        let (channel, upper, _) = try channel()
        try channel.writeInbound(HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(ByteBuffer(string: "abc")))))
        try channel.writeInbound(
            HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(ByteBuffer(string: "def")), endStream: true))
        )
        #expect(upper.bytes == "abcdef")
        #expect(upper.inputClosed == 1)
        try channel.writeInbound(HTTP2Frame.FramePayload.headers(.init(headers: HPACKHeaders(), endStream: true)))
        #expect(upper.inputClosed == 1)
        let (other, otherUpper, _) = try self.channel()
        try other.writeInbound(
            HTTP2Frame.FramePayload.headers(.init(headers: HPACKHeaders([("x", "y")]), endStream: true))
        )
        #expect(otherUpper.bytes == "")
        #expect(otherUpper.inputClosed == 1)
    }

    @Test("Bytes written go out as DATA, close(mode: .output) as an empty DATA with END_STREAM; writes after it fail")
    func outbound() throws {
        let (channel, _, _) = try channel()
        try channel.writeOutbound(ByteBuffer(string: "hello"))
        guard case .data(let data) = try #require(try channel.readOutbound(as: HTTP2Frame.FramePayload.self)),
            case .byteBuffer(let buffer) = data.data
        else {
            Issue.record("not DATA")
            return
        }
        #expect(String(buffer: buffer) == "hello")
        #expect(!data.endStream)
        let closed = channel.close(mode: .output)
        channel.embeddedEventLoop.run()
        try closed.wait()
        guard case .data(let end) = try #require(try channel.readOutbound(as: HTTP2Frame.FramePayload.self)) else {
            Issue.record("not DATA")
            return
        }
        #expect(end.endStream)
        #expect(throws: ChannelError.self) { try channel.writeOutbound(ByteBuffer(string: "late")) }
    }

    @Test("Reads asked from above reach the stream channel one for one (its window opens only for what was read)")
    func readsPassThrough() throws {
        let (channel, _, reads) = try channel()
        let before = reads.reads
        channel.read()
        channel.read()
        #expect(reads.reads == before + 2)
    }
}
