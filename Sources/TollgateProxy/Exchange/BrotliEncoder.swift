import CBrotli
import NIOCore

/// A Brotli stream (RFC 7932, `Content-Encoding: br`) made as a response body passes through
/// (`hosts[].compress`): each piece compressed and flushed (`BROTLI_OPERATION_FLUSH`), as
/// ``GzipEncoder`` does with gzip, so a slow page's head is not held back.
///
/// A class: the encoder state is libbrotli's, freed with it. Used on one event loop.
final class BrotliEncoder: ResponseBodyEncoder {
    private let state: OpaquePointer
    private var finished = false

    /// A stream at `quality` (0–11); nil when libbrotli cannot make one (out of memory).
    init?(quality: Int) {
        guard let state = BrotliEncoderCreateInstance(nil, nil, nil) else { return nil }
        self.state = state
        BrotliEncoderSetParameter(state, BROTLI_PARAM_QUALITY, UInt32(quality))
        // A 4 MiB window (22 bits, the default): what browsers' decoders take.
        BrotliEncoderSetParameter(state, BROTLI_PARAM_LGWIN, 22)
    }

    deinit {
        BrotliEncoderDestroyInstance(state)
    }

    func compress(_ input: ByteBuffer, allocator: ByteBufferAllocator) -> ByteBuffer {
        run(input, operation: BROTLI_OPERATION_FLUSH, allocator: allocator)
    }

    func finish(allocator: ByteBufferAllocator) -> ByteBuffer {
        defer { finished = true }
        return run(ByteBuffer(), operation: BROTLI_OPERATION_FINISH, allocator: allocator)
    }

    private func run(_ input: ByteBuffer, operation: BrotliEncoderOperation, allocator: ByteBufferAllocator) -> ByteBuffer {
        guard !finished else { return ByteBuffer() }
        var output = allocator.buffer(capacity: input.readableBytes / 2 + 64)
        input.withUnsafeReadableBytes { bytes in
            var availableIn = bytes.count
            var nextIn = bytes.bindMemory(to: UInt8.self).baseAddress
            repeat {
                var failed = false
                output.writeWithUnsafeMutableBytes(minimumWritableBytes: 256) { space in
                    var availableOut = space.count
                    var nextOut = space.bindMemory(to: UInt8.self).baseAddress
                    failed = BrotliEncoderCompressStream(state, operation, &availableIn, &nextIn, &availableOut, &nextOut, nil) == BROTLI_FALSE
                    return space.count - availableOut
                }
                if failed { break }
                // Done once the input is taken and the encoder holds no more output for this step.
            } while availableIn > 0 || BrotliEncoderHasMoreOutput(state) == BROTLI_TRUE
                || (operation == BROTLI_OPERATION_FINISH && BrotliEncoderIsFinished(state) == BROTLI_FALSE)
        }
        return output
    }
}
