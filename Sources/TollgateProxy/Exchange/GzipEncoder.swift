import CZlib
import NIOCore
import TollgateSession

/// A gzip stream (RFC 1952) made as a response body passes through (`hosts[].compress`): each
/// piece is compressed and flushed at once (`Z_SYNC_FLUSH`), so the client gets what the origin
/// sent so far without waiting for the rest — a page's head before its slow end, an event stream.
/// Used on one event loop.
final class GzipEncoder: ResponseBodyEncoder {
    private let stream: ZlibDeflateStream

    /// A stream at zlib `level` (1–9); nil when zlib cannot make one (out of memory).
    init?(level: Int) {
        // windowBits 31: a 32 KiB window with the gzip wrapper, as `Content-Encoding: gzip` is.
        guard let stream = ZlibDeflateStream(level: Int32(level), windowBits: 31) else { return nil }
        self.stream = stream
    }

    /// `input` compressed and flushed: what the client can decode of the body so far.
    func compress(_ input: ByteBuffer, allocator: ByteBufferAllocator) -> ByteBuffer {
        stream.run(input, flush: Z_SYNC_FLUSH, allocator: allocator)
    }

    /// The stream's end (the last block and the gzip trailer); the encoder is spent after it.
    func finish(allocator: ByteBufferAllocator) -> ByteBuffer {
        let last = stream.run(ByteBuffer(), flush: Z_FINISH, allocator: allocator)
        stream.end()
        return last
    }
}
