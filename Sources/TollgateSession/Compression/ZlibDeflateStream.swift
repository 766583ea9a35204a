import CZlib
import NIOCore

/// A zlib deflate stream fed piece by piece: what a gzip response body (`Content-Encoding: gzip`,
/// the proxy's `compress`) and a WebSocket task's compressed messages (permessage-deflate) are
/// made with. Each ``run(_:flush:allocator:)`` compresses its input and, flushed, gives what the
/// receiver can decode so far.
///
/// A class: zlib keeps pointers into its `z_stream`, which must not move. Used on one event loop.
package final class ZlibDeflateStream {
    private var stream = z_stream()
    private var isOpen = false

    /// A stream at zlib `level` (1–9, or `Z_DEFAULT_COMPRESSION`) with `windowBits` as
    /// `deflateInit2` takes them (-9…-15 raw deflate, 25–31 gzip); nil when zlib cannot make one.
    package init?(level: Int32, windowBits: Int32) {
        guard tollgate_deflate_init(&stream, level, windowBits) == Z_OK else { return nil }
        isOpen = true
    }

    deinit {
        end()
    }

    /// `input` compressed under `flush` (`Z_SYNC_FLUSH`: all of it decodable now; `Z_FINISH`: the
    /// stream's end, after which it makes nothing more).
    package func run(_ input: ByteBuffer, flush: Int32, allocator: ByteBufferAllocator) -> ByteBuffer {
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

    /// Forgets what was compressed so far (the next input refers to nothing before it).
    package func reset() {
        if isOpen { deflateReset(&stream) }
    }

    /// Frees zlib's state; the stream makes nothing more.
    package func end() {
        guard isOpen else { return }
        deflateEnd(&stream)
        isOpen = false
    }
}
