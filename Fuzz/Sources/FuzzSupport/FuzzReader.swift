/// Reads typed values off the front of a fuzz input, for targets that build a structured value
/// from the bytes; past the end every read gives zero or empty.
public struct FuzzReader {
    private let bytes: [UInt8]
    private var offset = 0

    /// A reader over `bytes`.
    public init(_ bytes: ArraySlice<UInt8>) { self.bytes = Array(bytes) }

    /// Whether every byte has been read.
    public var isAtEnd: Bool { offset >= bytes.count }

    /// The next byte.
    public mutating func byte() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// The next `count` bytes (fewer at the end).
    public mutating func bytes(_ count: Int) -> [UInt8] {
        let end = min(bytes.count, offset + count)
        defer { offset = end }
        return Array(bytes[min(offset, end)..<end])
    }

    /// A little-endian integer of `width` bytes.
    public mutating func integer(width: Int) -> UInt64 {
        bytes(width).enumerated().reduce(0) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
    }

    /// A string of up to 255 UTF-8 bytes: a length byte, then the bytes (invalid ones replaced).
    public mutating func string() -> String {
        String(decoding: bytes(Int(byte())), as: UTF8.self)
    }
}
