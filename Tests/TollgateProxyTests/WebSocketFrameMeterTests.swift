import NIOCore
import Testing
@testable import TollgateProxy

/// A frame as a client (masked) or a server (unmasked) sends it.
private func frame(_ opcode: UInt8, _ payload: [UInt8], fin: Bool = true, mask: [UInt8]? = nil) -> [UInt8] {
    var bytes: [UInt8] = [(fin ? 0x80 : 0) | opcode]
    let maskBit: UInt8 = mask == nil ? 0 : 0x80
    switch payload.count {
    case ..<126: bytes.append(maskBit | UInt8(payload.count))
    case ..<65536: bytes += [maskBit | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
    default: bytes += [maskBit | 127] + (0..<8).reversed().map { UInt8((payload.count >> ($0 * 8)) & 0xFF) }
    }
    guard let mask else { return bytes + payload }
    return bytes + mask + payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
}

private func forwarded(_ verdict: WebSocketFrameMeter.Verdict) -> [UInt8] {
    switch verdict {
    case .forward(let bytes), .tooBig(let bytes): Array(bytes.readableBytesView)
    }
}

@Suite("WebSocketFrameMeter, byte by byte")
struct WebSocketFrameMeterTests {
    @Test("Frames pass unchanged; whole messages and their payload bytes are counted, control frames are not")
    func counts() {
        var meter = WebSocketFrameMeter(maximumMessageSize: 100)
        let input = frame(0x1, Array("hello".utf8)) + frame(0x9, [1]) + frame(0x2, [1, 2], fin: false) + frame(0x0, [3])
        #expect(meter.consume(ByteBuffer(bytes: input)) == .forward(ByteBuffer(bytes: input)))
        #expect(meter.messages == 2)
        #expect(meter.payloadBytes == 8)
        #expect(meter.atFrameBoundary)
    }

    @Test("A header split across reads is held back until whole; a payload passes as it arrives")
    func splitHeader() {
        var meter = WebSocketFrameMeter(maximumMessageSize: 1 << 20)
        let bytes = frame(0x2, Array(repeating: 7, count: 300), mask: [9, 8, 7, 6])
        #expect(forwarded(meter.consume(ByteBuffer(bytes: bytes[0..<3]))) == [])
        #expect(forwarded(meter.consume(ByteBuffer(bytes: bytes[3..<10]))) == Array(bytes[0..<10]))
        #expect(!meter.atFrameBoundary)
        #expect(forwarded(meter.consume(ByteBuffer(bytes: bytes[10...]))) == Array(bytes[10...]))
        #expect(meter.messages == 1)
        #expect(meter.atFrameBoundary)
    }

    @Test("A message over the limit, fragments counted together, stops before its frame's first byte")
    func tooBig() {
        var meter = WebSocketFrameMeter(maximumMessageSize: 10)
        let first = frame(0x1, Array("123456".utf8), fin: false, mask: [1, 2, 3, 4])
        let second = frame(0x0, Array("7890x".utf8), mask: [1, 2, 3, 4])
        #expect(meter.consume(ByteBuffer(bytes: first + second)) == .tooBig(forward: ByteBuffer(bytes: first)))
        #expect(meter.atFrameBoundary)
        var large = WebSocketFrameMeter(maximumMessageSize: 70_000)
        #expect(large.consume(ByteBuffer(bytes: frame(0x2, Array(repeating: 0, count: 70_001)))) == .tooBig(forward: ByteBuffer()))
        var huge = WebSocketFrameMeter(maximumMessageSize: 10)
        // A 64-bit length with its top bit set: larger than any limit.
        #expect(huge.consume(ByteBuffer(bytes: [0x82, 0x7F, 0xFF, 0, 0, 0, 0, 0, 0, 1])) == .tooBig(forward: ByteBuffer()))
    }

    @Test("The first close frame's code is kept, masked or not; one without a code is 1005")
    func closeCodes() {
        var client = WebSocketFrameMeter(maximumMessageSize: 100)
        _ = client.consume(ByteBuffer(bytes: frame(0x8, [0x0F, 0xA0] + Array("bye".utf8), mask: [5, 6, 7, 8])))
        #expect(client.closeCode == 4000)
        _ = client.consume(ByteBuffer(bytes: frame(0x8, [0x03, 0xE8])))
        #expect(client.closeCode == 4000)
        var server = WebSocketFrameMeter(maximumMessageSize: 100)
        let split = frame(0x8, [])
        _ = server.consume(ByteBuffer(bytes: split))
        #expect(server.closeCode == 1005)
    }

    @Test("The proxy's own close frames: unmasked to the client, masked to the server")
    func closeFrames() {
        #expect(Array(WebSocketFrameMeter.closeFrame(code: 1009, masked: false).readableBytesView) == [0x88, 0x02, 0x03, 0xF1])
        let masked = Array(WebSocketFrameMeter.closeFrame(code: 1009, masked: true).readableBytesView)
        #expect(masked.count == 8)
        #expect(Array(masked[0..<2]) == [0x88, 0x82])
        #expect([masked[6] ^ masked[2], masked[7] ^ masked[3]] == [0x03, 0xF1])
    }

    @Test("Who closed first, and the totals the access log writes")
    func relayTotals() {
        var frames = WebSocketRelayFrames(limits: WebSocketRelayLimits(maximumMessageSize: 100, idleTimeout: .seconds(1)))
        _ = frames.fromClient(ByteBuffer(bytes: frame(0x1, Array("hi".utf8), mask: [1, 1, 1, 1])))
        _ = frames.fromUpstream(ByteBuffer(bytes: frame(0x1, Array("hi!".utf8))))
        _ = frames.fromUpstream(ByteBuffer(bytes: frame(0x8, [0x03, 0xE9])))
        _ = frames.fromClient(ByteBuffer(bytes: frame(0x8, [0x03, 0xE8], mask: [1, 1, 1, 1])))
        frames.proxyCloses(with: 1009)
        let totals = frames.totals
        #expect(totals == WebSocketTotals(messagesToUpstream: 1, bytesToUpstream: 2, messagesToClient: 1, bytesToClient: 3, closeCode: 1001, closedBy: .upstream))
        #expect(
            totals.json
                == #"{"messages_to_upstream":1,"bytes_to_upstream":2,"messages_to_client":1,"bytes_to_client":3,"close_code":1001,"closed_by":"upstream"}"#
        )
        #expect(WebSocketTotals().json.hasSuffix(#""close_code":1006,"closed_by":null}"#))
    }
}
