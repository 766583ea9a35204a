import NIOCore

/// Bytes received on a connection and not yet parsed, from which a parser reads heads, lines
/// and body pieces. Shared by the origin side's ``ResponseDecoder`` and the proxy's request
/// decoder, which read the same way and differ in what they accept.
package struct ReceivedBytes {
    /// The unread bytes; parsers read from it directly and call ``compact()`` after reading.
    package var buffer = ByteBuffer()

    package init() {}

    /// How many bytes are unread.
    package var count: Int { buffer.readableBytes }

    /// Adds received bytes (the first piece is kept as it is, without a copy).
    package mutating func append(_ bytes: ByteBuffer) {
        if buffer.readableBytes == 0 {
            buffer = bytes
        } else {
            var bytes = bytes
            buffer.writeBuffer(&bytes)
        }
    }

    /// Everything unread, which is then forgotten (the bytes after a protocol switch).
    package mutating func takeAll() -> ByteBuffer {
        defer { buffer = ByteBuffer() }
        return buffer
    }

    /// The next piece of a body with `remaining` bytes to go: what is here, at most that many
    /// (a slice of the received bytes, not a copy); nil when nothing is here.
    package mutating func readPiece(upTo remaining: Int64) -> ByteBuffer? {
        guard buffer.readableBytes > 0 else { return nil }
        let piece = buffer.readSlice(length: Int(min(remaining, Int64(buffer.readableBytes))))!
        compact()
        return piece
    }

    /// Drops the bytes already read once they take much room.
    package mutating func compact() {
        if buffer.readerIndex > 16 * 1024 { buffer.discardReadBytes() }
    }
}
