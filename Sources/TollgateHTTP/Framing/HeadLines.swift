#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The lines of a head whose line ends ``HeadScanner`` has checked, each without its CR LF (or
/// bare LF), as views of the bytes in place; iteration stops after the empty line that ends the
/// head (or at the end of the bytes).
package struct HeadLines: Sequence, IteratorProtocol {
    private let bytes: UnsafeRawBufferPointer
    private var position = 0
    private var ended = false

    /// The lines of `bytes`, which hold a checked head.
    package init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    /// The next line, or nil after the head's empty line.
    package mutating func next() -> UnsafeRawBufferPointer? {
        guard !ended else { return nil }
        // memchr: a head's lines are tens of bytes, past what a byte loop does faster.
        guard position < bytes.count, let base = bytes.baseAddress,
            let found = memchr(base + position, 0x0A, bytes.count - position)
        else {
            ended = true
            return nil
        }
        let index = UnsafeRawPointer(found) - base
        let end = index > position && bytes[index - 1] == 0x0D ? index - 1 : index
        let line = UnsafeRawBufferPointer(rebasing: bytes[position..<end])
        position = index + 1
        if line.isEmpty { ended = true }
        return line
    }
}
