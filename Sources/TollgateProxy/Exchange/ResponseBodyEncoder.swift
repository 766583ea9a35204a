import NIOCore

/// A response body compressed as it passes through (`hosts[].compress`): each piece compressed
/// and flushed at once, so the client can decode what the origin sent so far; the end closes the
/// stream. Used on one event loop.
protocol ResponseBodyEncoder: AnyObject {
    /// `input` compressed and flushed.
    func compress(_ input: ByteBuffer, allocator: ByteBufferAllocator) -> ByteBuffer
    /// The stream's end; the encoder is spent after it.
    func finish(allocator: ByteBufferAllocator) -> ByteBuffer
}
