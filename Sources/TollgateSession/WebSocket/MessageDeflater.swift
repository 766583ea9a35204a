import CZlib
import NIOCore

/// Compresses the messages a WebSocket task sends (RFC 7692 §7.2.1): raw deflate, each message
/// flushed (`Z_SYNC_FLUSH`) and its last four bytes (`00 00 FF FF`) taken off. The window goes on
/// from message to message unless the server said `client_no_context_takeover`. Used on one
/// event loop.
final class MessageDeflater {
    private let stream: ZlibDeflateStream
    private let resetsEachMessage: Bool

    /// A deflater with a window of 2^`windowBits` bytes; nil when zlib cannot make one.
    init?(windowBits: Int, resetsEachMessage: Bool) {
        guard let stream = ZlibDeflateStream(level: Z_DEFAULT_COMPRESSION, windowBits: -Int32(windowBits)) else { return nil }
        self.stream = stream
        self.resetsEachMessage = resetsEachMessage
    }

    /// `message` compressed, as its frame's payload.
    func compress(_ message: ByteBuffer, allocator: ByteBufferAllocator) -> ByteBuffer {
        var output = stream.run(message, flush: Z_SYNC_FLUSH, allocator: allocator)
        // Every sync flush ends with an empty stored block, 00 00 FF FF: the receiver adds it back.
        if output.readableBytes >= 4 { output.moveWriterIndex(to: output.writerIndex - 4) }
        if resetsEachMessage { stream.reset() }
        return output
    }
}
