import NIOCore
import NIOEmbedded
import NIOWebSocket
import Testing
import TollgateHTTP

@testable import TollgateSession

/// permessage-deflate (RFC 7692): the server's answer to the offer, the message codecs against
/// the RFC's own examples, and the handler on an `EmbeddedChannel`.
@Suite("permessage-deflate: negotiation, codecs, handler")
struct PerMessageDeflateTests {
    private static func accepted(_ value: String) -> Result<PerMessageDeflate?, WebSocketHandshakeError> {
        PerMessageDeflate.accepted(value.isEmpty ? [] : [value])
    }

    @Test("The server's answer: none, the bare extension, each parameter (quoted values too); anything the offer does not allow is refused")
    func negotiation() throws {
        #expect(try Self.accepted("").get() == nil)
        #expect(try Self.accepted("permessage-deflate").get() == PerMessageDeflate())
        let all = try #require(
            try Self.accepted(
                "Permessage-Deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=10; client_max_window_bits=\"9\""
            ).get()
        )
        #expect(all.serverNoContextTakeover && all.clientNoContextTakeover)
        #expect(all.serverMaxWindowBits == 10 && all.clientMaxWindowBits == 9 && all.clientWindowBits == 9)
        #expect(try Self.accepted("permessage-deflate; client_max_window_bits=8").get()?.clientWindowBits == 9, "zlib has no 256-byte window")
        for refused in [
            "x-webkit-deflate-frame", "permessage-deflate, permessage-deflate", "permessage-deflate; client_max_window_bits",
            "permessage-deflate; server_max_window_bits=16", "permessage-deflate; server_max_window_bits=+9",
            "permessage-deflate; server_no_context_takeover; server_no_context_takeover", "permessage-deflate; mystery=1",
            "permessage-deflate; client_no_context_takeover=yes",
        ] {
            guard case .failure = Self.accepted(refused) else {
                Issue.record("\(refused) was accepted")
                continue
            }
        }
    }

    @Test("A 101 is checked against the offer: an extension without an offer is refused, permessage-deflate with one is agreed")
    func handshake() throws {
        let offering = WebSocketHandshake(key: "dGhlIHNhbXBsZSBub25jZQ==", protocols: [], offersCompression: true)
        var request = HeaderFields()
        request.add(name: "Sec-WebSocket-Extensions", value: "x-mine")
        offering.addFields(to: &request)
        #expect(request.values(for: "Sec-WebSocket-Extensions") == ["permessage-deflate; client_max_window_bits"])
        var fields = HeaderFields()
        fields.add(name: .upgrade, value: "websocket")
        fields.add(name: .connection, value: "Upgrade")
        fields.add(name: "Sec-WebSocket-Accept", value: "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        fields.add(name: "Sec-WebSocket-Extensions", value: "permessage-deflate; server_no_context_takeover")
        let head = HTTPResponseHead(status: 101, headerFields: fields)
        #expect(try offering.check(head).get().compression == PerMessageDeflate(serverNoContextTakeover: true))
        let silent = WebSocketHandshake(key: "dGhlIHNhbXBsZSBub25jZQ==", protocols: [])
        var plain = HeaderFields()
        silent.addFields(to: &plain)
        #expect(plain["Sec-WebSocket-Extensions"] == nil)
        guard case .failure = silent.check(head) else {
            Issue.record("an extension that was not offered was accepted")
            return
        }
    }

    @Test("RFC 7692 §7.2.3: \"Hello\" compressed is f2 48 cd c9 c9 07 00; in two fragments, and again with the window kept (f2 00 11 00 00)")
    func rfcExamples() throws {
        let allocator = ByteBufferAllocator()
        let deflater = try #require(MessageDeflater(windowBits: 15, resetsEachMessage: false))
        #expect(Array(buffer: deflater.compress(ByteBuffer(string: "Hello"), allocator: allocator)) == [0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00])
        let inflater = try #require(MessageInflater(resetsEachMessage: false))
        let first = try inflater.inflate(ByteBuffer(bytes: [0xf2, 0x48, 0xcd]), ends: false, limit: 100, allocator: allocator)
        let rest = try inflater.inflate(ByteBuffer(bytes: [0xc9, 0xc9, 0x07, 0x00]), ends: true, limit: 100, allocator: allocator)
        #expect(String(buffer: first) + String(buffer: rest) == "Hello")
        // The second message refers back to the first one's bytes: only a kept window reads it.
        let again = try inflater.inflate(ByteBuffer(bytes: [0xf2, 0x00, 0x11, 0x00, 0x00]), ends: true, limit: 100, allocator: allocator)
        #expect(String(buffer: again) == "Hello")
        let fresh = try #require(MessageInflater(resetsEachMessage: true))
        _ = try fresh.inflate(ByteBuffer(bytes: [0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00]), ends: true, limit: 100, allocator: allocator)
        #expect(throws: MessageInflater.Failure.self) {
            _ = try fresh.inflate(ByteBuffer(bytes: [0xf2, 0x00, 0x11, 0x00, 0x00]), ends: true, limit: 100, allocator: allocator)
        }
    }

    @Test("A message that would decompress past the limit is refused at the limit, not made whole first; garbage is corrupt")
    func bounds() throws {
        let allocator = ByteBufferAllocator()
        let deflater = try #require(MessageDeflater(windowBits: 15, resetsEachMessage: true))
        let bomb = deflater.compress(ByteBuffer(repeating: UInt8(ascii: "x"), count: 10 << 20), allocator: allocator)
        #expect(bomb.readableBytes < 20_000)
        let inflater = try #require(MessageInflater(resetsEachMessage: true))
        #expect(throws: MessageInflater.Failure.tooBig) { _ = try inflater.inflate(bomb, ends: true, limit: 1 << 20, allocator: allocator) }
        let exact = try #require(MessageInflater(resetsEachMessage: true))
        #expect(try exact.inflate(bomb, ends: true, limit: 10 << 20, allocator: allocator).readableBytes == 10 << 20)
        let other = try #require(MessageInflater(resetsEachMessage: true))
        #expect(throws: MessageInflater.Failure.self) {
            _ = try other.inflate(ByteBuffer(bytes: [0xff, 0xff, 0xff, 0xff]), ends: true, limit: 100, allocator: allocator)
        }
    }

    @Test("The handler: data messages leave compressed with RSV1, control frames as they are; compressed frames arrive plain, fragments too; RSV1 it has no meaning for is left for the machine")
    func handler() throws {
        let channel = EmbeddedChannel()
        let handler = try #require(PerMessageDeflateHandler(PerMessageDeflate(), maximumMessageSize: 1000))
        try channel.pipeline.syncOperations.addHandler(handler)
        try channel.writeOutbound(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: "Hello")))
        let sent = try #require(try channel.readOutbound(as: WebSocketFrame.self))
        #expect(sent.rsv1 && sent.opcode == .text && Array(buffer: sent.data) == [0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00])
        try channel.writeOutbound(WebSocketFrame(fin: true, opcode: .ping, data: ByteBuffer(string: "p")))
        let ping = try #require(try channel.readOutbound(as: WebSocketFrame.self))
        #expect(!ping.rsv1 && String(buffer: ping.data) == "p")

        try channel.writeInbound(WebSocketFrame(fin: false, rsv1: true, opcode: .text, data: ByteBuffer(bytes: [0xf2, 0x48, 0xcd])))
        try channel.writeInbound(WebSocketFrame(fin: true, opcode: .continuation, data: ByteBuffer(bytes: [0xc9, 0xc9, 0x07, 0x00])))
        let head = try #require(try channel.readInbound(as: WebSocketFrame.self))
        let tail = try #require(try channel.readInbound(as: WebSocketFrame.self))
        #expect(!head.rsv1 && !tail.rsv1 && String(buffer: head.data) + String(buffer: tail.data) == "Hello")
        try channel.writeInbound(WebSocketFrame(fin: true, opcode: .binary, data: ByteBuffer(string: "plain")))
        #expect(try channel.readInbound(as: WebSocketFrame.self).map { String(buffer: $0.data) } == "plain")
        try channel.writeInbound(WebSocketFrame(fin: true, rsv1: true, opcode: .ping, data: ByteBuffer()))
        #expect(try channel.readInbound(as: WebSocketFrame.self)?.rsv1 == true, "a control frame's RSV1 is the machine's to refuse")
        let masked = WebSocketFrame(fin: true, rsv1: true, opcode: .text, maskKey: .random(), data: ByteBuffer(bytes: [1, 2, 3]))
        try channel.writeInbound(masked)
        #expect(try channel.readInbound(as: WebSocketFrame.self) == masked, "a masked text frame passes as it came, for the machine to refuse")

        #expect(throws: MessageInflater.Failure.self) {
            try channel.writeInbound(WebSocketFrame(fin: true, rsv1: true, opcode: .text, data: ByteBuffer(bytes: [0xff, 0xff, 0xff])))
        }
        try channel.writeInbound(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: "after")))
        #expect(try channel.readInbound(as: WebSocketFrame.self) == nil, "nothing after a failed message")
        _ = try channel.finish()
    }
}
