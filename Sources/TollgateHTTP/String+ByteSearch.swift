#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension String {
    /// The UTF-8 offset of the first `byte` (an ASCII byte, so a character boundary), or nil.
    ///
    /// `memchr` over the string's own bytes where it has them contiguously (native and small
    /// strings do); the generic search of `utf8` walks an index per byte, about fifteen
    /// instructions each, and these searches run for every request.
    package func firstUTF8Offset(of byte: UInt8) -> Int? {
        let contiguous: Int?? = utf8.withContiguousStorageIfAvailable { bytes -> Int? in
            guard let base = bytes.baseAddress, let found = memchr(base, Int32(byte), bytes.count) else { return nil }
            return UnsafeRawPointer(found) - UnsafeRawPointer(base)
        }
        if let contiguous { return contiguous }
        return utf8.firstIndex(of: byte).map { utf8.distance(from: utf8.startIndex, to: $0) }
    }

    /// Whether the string's UTF-8 holds `byte` (``firstUTF8Offset(of:)``).
    package func containsUTF8(_ byte: UInt8) -> Bool {
        firstUTF8Offset(of: byte) != nil
    }

    /// The index `offset` UTF-8 bytes from the start (a boundary ``firstUTF8Offset(of:)`` found).
    package func utf8Index(at offset: Int) -> String.Index {
        utf8.index(utf8.startIndex, offsetBy: offset)
    }
}
