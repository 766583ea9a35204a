import NIOCore

/// Reads one direction of a relayed WebSocket connection frame by frame (RFC 6455 §5.2) as its
/// bytes pass, without holding payloads: counts whole data messages and their payload bytes,
/// keeps the code of the first close frame, and stops a message whose size, fragments counted
/// together, would pass the limit — before any byte of the frame that would pass it is forwarded,
/// so the relay can put its own close frame on a clean frame boundary.
///
/// Pure: bytes in, a verdict out. A frame header split across reads is held back until it is
/// whole. Protocol checks beyond framing are the endpoints' business; the relay passes what
/// they send (close codes and reasons, pings, pongs) unchanged.
struct WebSocketFrameMeter {
    enum Verdict: Equatable {
        /// Forward these bytes (possibly none yet: a partial header is held).
        case forward(ByteBuffer)
        /// Forward these bytes, then close both sides with 1009: the next frame makes a message
        /// larger than the limit.
        case tooBig(forward: ByteBuffer)
    }

    /// The current frame: its opcode, the mask key (nil when unmasked), payload bytes left.
    private struct Frame {
        var opcode: UInt8
        var fin: Bool
        var mask: [UInt8]?
        var remaining: UInt64
        var payloadOffset = 0
    }

    let maximumMessageSize: Int
    /// Whole data messages passed.
    private(set) var messages = 0
    /// Payload bytes of data frames passed.
    private(set) var payloadBytes: Int64 = 0
    /// The code of the first close frame seen (1005 when it carried none); nil before one.
    private(set) var closeCode: Int?

    private var header: [UInt8] = []
    private var frame: Frame?
    private var messageSize: UInt64 = 0
    /// The first two bytes of a close frame's payload (unmasked), as they pass.
    private var closePayload: [UInt8] = []

    init(maximumMessageSize: Int) {
        self.maximumMessageSize = maximumMessageSize
    }

    /// Whether the bytes forwarded so far end at a frame boundary (a frame of the relay's own can
    /// be sent this way without corrupting one in flight).
    var atFrameBoundary: Bool { frame == nil }

    mutating func consume(_ bytes: ByteBuffer) -> Verdict {
        var input = bytes
        var output = ByteBuffer()
        while input.readableBytes > 0 {
            if var current = frame {
                let count = Int(min(current.remaining, UInt64(input.readableBytes)))
                let piece = input.readSlice(length: count)!
                if current.opcode == 0x8 { collectClosePayload(piece, of: &current) }
                if current.opcode < 0x8 { payloadBytes += Int64(count) }
                output.writeImmutableBuffer(piece)
                current.remaining -= UInt64(count)
                current.payloadOffset += count
                frame = current
                if current.remaining == 0 { frameEnded() }
                continue
            }
            header.append(input.readInteger(as: UInt8.self)!)
            guard let parsed = Self.parseHeader(header) else { continue }
            if parsed.opcode < 0x8 {
                // A data frame: a new message (text, binary) or the next piece of one.
                let size = (parsed.opcode == 0 ? messageSize : 0).addingReportingOverflow(parsed.remaining)
                guard !size.overflow, size.partialValue <= UInt64(maximumMessageSize) else { return .tooBig(forward: output) }
                messageSize = size.partialValue
            }
            output.writeBytes(header)
            header = []
            frame = parsed
            if parsed.remaining == 0 { frameEnded() }
        }
        return .forward(output)
    }

    private mutating func frameEnded() {
        guard let ended = frame else { return }
        frame = nil
        if ended.opcode < 0x8, ended.fin {
            messages += 1
            messageSize = 0
        }
        if ended.opcode == 0x8, closeCode == nil {
            closeCode = closePayload.count == 2 ? Int(closePayload[0]) << 8 | Int(closePayload[1]) : 1005
        }
        closePayload = []
    }

    private mutating func collectClosePayload(_ piece: ByteBuffer, of frame: inout Frame) {
        for (index, byte) in piece.readableBytesView.enumerated() where frame.payloadOffset + index < 2 {
            let position = frame.payloadOffset + index
            closePayload.append(byte ^ (frame.mask?[position % 4] ?? 0))
        }
    }

    /// A whole header (2–14 bytes), or nil while more bytes are needed.
    private static func parseHeader(_ bytes: [UInt8]) -> Frame? {
        guard bytes.count >= 2 else { return nil }
        let masked = bytes[1] & 0x80 != 0
        let short = UInt64(bytes[1] & 0x7F)
        let lengthBytes = short == 126 ? 2 : short == 127 ? 8 : 0
        let total = 2 + lengthBytes + (masked ? 4 : 0)
        guard bytes.count == total else { return nil }
        var length = short
        if lengthBytes > 0 {
            length = bytes[2..<(2 + lengthBytes)].reduce(0) { $0 << 8 | UInt64($1) }
        }
        return Frame(
            opcode: bytes[0] & 0x0F, fin: bytes[0] & 0x80 != 0,
            mask: masked ? Array(bytes[(total - 4)...]) : nil, remaining: length
        )
    }

    /// A close frame with `code` and no reason; `masked` (toward a server, as a client must).
    static func closeFrame(code: Int, masked: Bool) -> ByteBuffer {
        let payload: [UInt8] = [UInt8(code >> 8), UInt8(code & 0xFF)]
        guard masked else { return ByteBuffer(bytes: [0x88, 0x02] + payload) }
        let mask = (0..<4).map { _ in UInt8.random(in: 0...255) }
        return ByteBuffer(bytes: [0x88, 0x82] + mask + payload.enumerated().map { $0.element ^ mask[$0.offset] })
    }
}
