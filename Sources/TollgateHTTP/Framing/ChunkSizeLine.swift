/// Reads a chunk-size line, `1*HEXDIG [ BWS ";" chunk-ext ]` (RFC 9112 §7.1), without its line end.
package enum ChunkSizeLine {
    /// Hexadecimal digits past this many (leading zeros count) are refused: 15 always fit in an `Int64`.
    package static let maximumDigits = 15

    /// The chunk size of `line`, or why it is refused. Whitespace between the size and a `;` is
    /// accepted (RFC 9112's BWS); what follows the `;` is only checked for control bytes, and
    /// only when `rules` say so.
    package static func size(of line: UnsafeRawBufferPointer, rules: FramingRules) -> Result<Int64, FramingError> {
        var value: Int64 = 0
        var index = 0
        while index < line.count, let digit = hexValue(line[index]) {
            guard index < maximumDigits else { return .failure(.chunkSizeTooLarge) }
            value = value * 16 + Int64(digit)
            index += 1
        }
        guard index > 0 else { return .failure(.invalidChunkSize(FramingError.printable(line))) }
        while index < line.count, line[index] == 0x20 || line[index] == 0x09 { index += 1 }
        guard index < line.count else { return .success(value) }
        guard line[index] == UInt8(ascii: ";") else { return .failure(.invalidChunkSize(FramingError.printable(line))) }
        if rules.refusesControlBytesInChunkExtensions {
            for byte in line[index...] where byte != 0x09 && (byte < 0x20 || byte == 0x7F) {
                return .failure(.controlByteInChunkExtension)
            }
        }
        return .success(value)
    }

    /// The value of one hexadecimal digit, or nil when `byte` is not one.
    package static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }
}
