/// Finds where a line of HTTP/1 bytes ends, refusing what no line may hold: the one line reader
/// of heads, chunk-size lines and trailers on both sides.
///
/// It reads received bytes in place and returns indices (no copy of a line is made). A CR is
/// judged with the byte after it, so a CR that ends the bytes received so far is looked at again
/// when more arrive.
package enum LineReader {
    /// Where a scan stopped.
    package enum Scan: Hashable, Sendable {
        /// A line ends here: its content (without CR LF) ends at `contentEnd`, the next line starts at `next`.
        case line(contentEnd: Int, next: Int)
        /// No line end yet; bytes before `scanned` need not be looked at again.
        case incomplete(scanned: Int)
        case failure(FramingError)
    }

    /// Scans `bytes` from `start` for the end of the line that starts at `lineStart`.
    ///
    /// - Parameters:
    ///   - bytes: the received bytes.
    ///   - start: the first byte not looked at yet (`lineStart`, or a resumed scan's position).
    ///   - lineStart: where the line starts (an LF right there has no CR before it).
    ///   - limit: the index the line's LF must be below; once every byte before it has arrived
    ///     without one, the line is ``FramingError/tooLarge(_:)``.
    ///   - acceptsBareLF: whether an LF without a CR ends a line, or is refused.
    ///   - part: the part of the message the line belongs to, for the error.
    package static func scan(
        _ bytes: UnsafeRawBufferPointer,
        from start: Int,
        lineStart: Int,
        limit: Int,
        acceptsBareLF: Bool,
        part: FramingError.Part
    ) -> Scan {
        var index = start
        while index < bytes.count {
            // Eight bytes at a time while none of them can end the line or be refused: every byte
            // at or above 0x0E ("has a byte less than n" on the word; its lowest flagged byte is
            // exactly the first such byte, as borrows only run upwards). The scan goes straight
            // to that byte, read below. The limit is checked for the whole word.
            while index &+ 8 <= bytes.count, index &+ 8 < limit {
                let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self))
                let below = (word &- 0x0E0E_0E0E_0E0E_0E0E) & ~word & 0x8080_8080_8080_8080
                if below != 0 {
                    index &+= below.trailingZeroBitCount &>> 3
                    break
                }
                index &+= 8
            }
            guard index < bytes.count else { break }
            switch bytes[index] {
            case 0x0A:
                let afterCR = index > lineStart && bytes[index - 1] == 0x0D
                guard afterCR || acceptsBareLF else { return .failure(.bareLF(part)) }
                return .line(contentEnd: afterCR ? index - 1 : index, next: index + 1)
            case 0x0D:
                guard index + 1 < bytes.count else { return .incomplete(scanned: index) }
                if bytes[index + 1] != 0x0A { return .failure(.bareCR(part)) }
            case 0:
                return .failure(.nul(part))
            default:
                break
            }
            index += 1
            if index >= limit { return .failure(.tooLarge(part)) }
        }
        return .incomplete(scanned: index)
    }
}
