import CZlib
import NIOCore

/// A gzip stream (RFC 1952) made as a response body passes through (`hosts[].compress`): each
/// piece is compressed and flushed at once (`Z_SYNC_FLUSH`), so the client gets what the origin
/// sent so far without waiting for the rest — a page's head before its slow end, an event stream.
///
/// A class: zlib keeps pointers into its `z_stream`, which must not move. Used on one event loop.
final class GzipEncoder: ResponseBodyEncoder {
    private var stream = z_stream()
    private var isOpen = false

    /// A stream at zlib `level` (1–9); nil when zlib cannot make one (out of memory).
    init?(level: Int) {
        guard tollgate_deflate_init_gzip(&stream, Int32(level)) == Z_OK else { return nil }
        isOpen = true
    }

    deinit {
        if isOpen { deflateEnd(&stream) }
    }

    /// `input` compressed and flushed: what the client can decode of the body so far.
    func compress(_ input: ByteBuffer, allocator: ByteBufferAllocator) -> ByteBuffer {
        run(input, flush: Z_SYNC_FLUSH, allocator: allocator)
    }

    /// The stream's end (the last block and the gzip trailer); the encoder is spent after it.
    func finish(allocator: ByteBufferAllocator) -> ByteBuffer {
        let last = run(ByteBuffer(), flush: Z_FINISH, allocator: allocator)
        if isOpen {
            deflateEnd(&stream)
            isOpen = false
        }
        return last
    }

    private func run(_ input: ByteBuffer, flush: Int32, allocator: ByteBufferAllocator) -> ByteBuffer {
        guard isOpen else { return ByteBuffer() }
        // Text shrinks: half the input is usually room enough; the loop grows it when not.
        var output = allocator.buffer(capacity: input.readableBytes / 2 + 64)
        input.withUnsafeReadableBytes { bytes in
            stream.next_in = UnsafeMutablePointer(mutating: bytes.bindMemory(to: Bytef.self).baseAddress)
            stream.avail_in = uInt(bytes.count)
            var status = Z_OK
            repeat {
                var filled = false
                output.writeWithUnsafeMutableBytes(minimumWritableBytes: 64) { space in
                    stream.next_out = space.bindMemory(to: Bytef.self).baseAddress
                    stream.avail_out = uInt(space.count)
                    status = deflate(&stream, flush)
                    filled = stream.avail_out == 0
                    return space.count - Int(stream.avail_out)
                }
                // More to come while the output filled up, or the end has not been written.
                if !filled && (flush != Z_FINISH || status == Z_STREAM_END || status < 0) { break }
            } while status >= 0
            stream.next_in = nil
            stream.avail_in = 0
        }
        return output
    }
}
