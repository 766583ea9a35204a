import CZlib
import NIOCore

/// Decompresses the messages a server sends with permessage-deflate (RFC 7692 §7.2.2), frame by
/// frame as they arrive: each frame's payload goes through raw inflate (a 32 KiB window holds any
/// window the server used), and the message's end adds the `00 00 FF FF` the server took off.
/// Bounded: a message that would grow past its limit is refused before more is made of it.
///
/// A class: zlib keeps pointers into its `z_stream`, which must not move. Used on one event loop.
final class MessageInflater {
    /// Why a message could not be decompressed.
    enum Failure: Error, Equatable {
        /// It would be larger than the limit (the connection closes with 1009).
        case tooBig
        /// It is not valid deflate data (1007).
        case corrupt(String)
    }

    private var stream = z_stream()
    private var isOpen = false
    private let resetsEachMessage: Bool
    /// Bytes made of the current message so far.
    private var messageBytes = 0

    /// An inflater; `resetsEachMessage` when the server said `server_no_context_takeover`.
    init?(resetsEachMessage: Bool) {
        self.resetsEachMessage = resetsEachMessage
        guard tollgate_inflate_init_raw(&stream) == Z_OK else { return nil }
        isOpen = true
    }

    deinit {
        if isOpen { inflateEnd(&stream) }
    }

    /// The bytes `payload` (one frame's) decompresses to; `ends`: the frame ends its message.
    /// The message may come to at most `limit` bytes.
    func inflate(_ payload: ByteBuffer, ends: Bool, limit: Int, allocator: ByteBufferAllocator) throws(Failure) -> ByteBuffer {
        var output = allocator.buffer(capacity: min(limit - messageBytes + 1, max(256, payload.readableBytes * 4)))
        try run(payload, into: &output, limit: limit)
        if ends {
            try run(Self.tail, into: &output, limit: limit)
            messageBytes = 0
            if resetsEachMessage { inflateReset(&stream) }
        }
        return output
    }

    /// The empty stored block every message's compressed bytes end with (RFC 7692 §7.2.2).
    private static let tail = ByteBuffer(bytes: [0x00, 0x00, 0xFF, 0xFF])

    private func run(_ input: ByteBuffer, into output: inout ByteBuffer, limit: Int) throws(Failure) {
        var failure: Failure?
        input.withUnsafeReadableBytes { bytes in
            stream.next_in = UnsafeMutablePointer(mutating: bytes.bindMemory(to: Bytef.self).baseAddress)
            stream.avail_in = uInt(bytes.count)
            while true {
                // One byte past the limit is room enough to know the message is too big.
                let room = limit - messageBytes + 1
                var status = Z_OK
                var filled = false
                var made = 0
                output.writeWithUnsafeMutableBytes(minimumWritableBytes: min(room, 16 << 10)) { space in
                    let usable = min(space.count, room)
                    stream.next_out = space.bindMemory(to: Bytef.self).baseAddress
                    stream.avail_out = uInt(usable)
                    status = CZlib.inflate(&stream, Z_SYNC_FLUSH)
                    filled = stream.avail_out == 0
                    made = usable - Int(stream.avail_out)
                    return made
                }
                messageBytes += made
                if messageBytes > limit {
                    failure = .tooBig
                    break
                }
                if status == Z_STREAM_END {
                    // A final block (BFINAL): the stream ends; what follows starts a new one.
                    inflateReset(&stream)
                    if stream.avail_in == 0 { break }
                    continue
                }
                if status != Z_OK && status != Z_BUF_ERROR {
                    failure = .corrupt(stream.msg.map { String(cString: $0) } ?? "inflate failed (\(status))")
                    break
                }
                // Room left over: zlib took all the input it could.
                if !filled { break }
            }
            stream.next_in = nil
            stream.avail_in = 0
        }
        if let failure { throw failure }
    }
}
