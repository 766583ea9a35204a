import CZlib
import NIOCore

/// Compresses the messages a WebSocket task sends (RFC 7692 §7.2.1): raw deflate, each message
/// flushed (`Z_SYNC_FLUSH`) and its last four bytes (`00 00 FF FF`) taken off. The window goes on
/// from message to message unless the server said `client_no_context_takeover`.
///
/// A class: zlib keeps pointers into its `z_stream`, which must not move. Used on one event loop.
final class MessageDeflater {
    private var stream = z_stream()
    private var isOpen = false
    private let resetsEachMessage: Bool

    /// A deflater with a window of 2^`windowBits` bytes; nil when zlib cannot make one.
    init?(windowBits: Int, resetsEachMessage: Bool) {
        self.resetsEachMessage = resetsEachMessage
        guard tollgate_deflate_init_raw(&stream, Z_DEFAULT_COMPRESSION, Int32(windowBits)) == Z_OK else { return nil }
        isOpen = true
    }

    deinit {
        if isOpen { deflateEnd(&stream) }
    }

    /// `message` compressed, as its frame's payload.
    func compress(_ message: ByteBuffer, allocator: ByteBufferAllocator) -> ByteBuffer {
        var output = allocator.buffer(capacity: message.readableBytes / 2 + 64)
        message.withUnsafeReadableBytes { bytes in
            stream.next_in = UnsafeMutablePointer(mutating: bytes.bindMemory(to: Bytef.self).baseAddress)
            stream.avail_in = uInt(bytes.count)
            // Sync-flushed output is complete once zlib leaves room in the output unused.
            var filled = true
            while filled {
                output.writeWithUnsafeMutableBytes(minimumWritableBytes: 256) { space in
                    stream.next_out = space.bindMemory(to: Bytef.self).baseAddress
                    stream.avail_out = uInt(space.count)
                    _ = deflate(&stream, Z_SYNC_FLUSH)
                    filled = stream.avail_out == 0
                    return space.count - Int(stream.avail_out)
                }
            }
            stream.next_in = nil
            stream.avail_in = 0
        }
        // Every sync flush ends with an empty stored block, 00 00 FF FF: the receiver adds it back.
        if output.readableBytes >= 4 { output.moveWriterIndex(to: output.writerIndex - 4) }
        if resetsEachMessage { deflateReset(&stream) }
        return output
    }
}
