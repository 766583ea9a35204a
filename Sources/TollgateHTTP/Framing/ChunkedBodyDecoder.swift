/// Reads a chunked body (RFC 9112 §7.1) on both sides: chunk-size lines, chunk data and the line
/// end after it, the trailer section, each within the limits of its ``FramingRules``.
///
/// A pure state machine over received bytes: ``next(_:)`` takes the bytes not yet consumed and
/// says how many of them are framing to drop and which are body, trailer field or the end; the
/// caller consumes exactly that and calls again with what is left. Nothing is copied: body
/// pieces are ranges of the bytes given.
package struct ChunkedBodyDecoder: Sendable {
    /// What to do with the bytes given to ``next(_:)``.
    package enum Step: Hashable, Sendable {
        /// Drop `skip` bytes of framing; the rest is an unfinished line: more bytes are needed.
        case needMoreBytes(skip: Int)
        /// Drop `skip` bytes of framing; the `length` bytes after them are body.
        case body(skip: Int, length: Int)
        /// The bytes in `line` are a trailer field line (without its line end), for the caller to
        /// check or ignore; then drop `skip` bytes (through its line end).
        case trailerField(line: Range<Int>, skip: Int)
        /// The body and its trailers end after `skip` bytes.
        case end(skip: Int)
        /// The body cannot be read; nothing more is.
        case failure(FramingError)
    }

    private enum State: Hashable, Sendable {
        case chunkSize
        case chunkData(remaining: Int64)
        case chunkDataEnd
        /// `bytes`: the trailer section so far, each line counted with two bytes for its end.
        case trailers(bytes: Int, fields: Int)
        case ended
    }

    private let rules: FramingRules
    private var state = State.chunkSize

    /// A decoder for one chunked body read by `rules`.
    package init(rules: FramingRules) {
        self.rules = rules
    }

    /// The next step for `bytes`, the received bytes the previous step left unconsumed.
    package mutating func next(_ bytes: UnsafeRawBufferPointer) -> Step {
        var offset = 0
        while true {
            switch state {
            case .chunkSize:
                let scan = LineReader.scan(
                    bytes,
                    from: offset,
                    lineStart: offset,
                    limit: offset + rules.maximumChunkLineBytes + rules.lineLimitSlack,
                    acceptsBareLF: rules.acceptsBareLF,
                    part: .chunkSizeLine
                )
                guard case .line(let contentEnd, let next) = scan else { return step(for: scan, skip: offset) }
                let line = UnsafeRawBufferPointer(rebasing: bytes[offset..<contentEnd])
                switch ChunkSizeLine.size(of: line, rules: rules) {
                case .failure(let error):
                    return .failure(error)
                case .success(let size):
                    state = size == 0 ? .trailers(bytes: 0, fields: 0) : .chunkData(remaining: size)
                    offset = next
                }
            case .chunkData(let remaining):
                let available = bytes.count - offset
                guard available > 0 else { return .needMoreBytes(skip: offset) }
                let length = Int(min(remaining, Int64(available)))
                state = remaining == Int64(length) ? .chunkDataEnd : .chunkData(remaining: remaining - Int64(length))
                return .body(skip: offset, length: length)
            case .chunkDataEnd:
                guard let lineEnd = chunkDataEnd(bytes, at: offset) else { return .needMoreBytes(skip: offset) }
                guard lineEnd > 0 else { return .failure(.chunkDataNotFollowedByLineEnd) }
                state = .chunkSize
                offset += lineEnd
            case .trailers(let sectionBytes, let fields):
                let budget = rules.maximumTrailerBytes - sectionBytes
                guard budget > 0 else { return .failure(.tooLarge(.trailerSection)) }
                let scan = LineReader.scan(
                    bytes,
                    from: offset,
                    lineStart: offset,
                    limit: offset + budget + rules.lineLimitSlack,
                    acceptsBareLF: rules.acceptsBareLF,
                    part: .trailerSection
                )
                guard case .line(let contentEnd, let next) = scan else { return step(for: scan, skip: offset) }
                if contentEnd == offset {
                    state = .ended
                    return .end(skip: next)
                }
                if let maximum = rules.maximumTrailerFields, fields + 1 > maximum {
                    return .failure(.tooManyLines(.trailerSection))
                }
                state = .trailers(bytes: sectionBytes + contentEnd - offset + 2, fields: fields + 1)
                return .trailerField(line: offset..<contentEnd, skip: next)
            case .ended:
                preconditionFailure("Invalid state: the chunked body has ended")
            }
        }
    }

    /// The length of the line end after chunk data at `offset` (CRLF, or LF when the rules accept
    /// a bare one), 0 when something else is there, nil when it has not fully arrived.
    private func chunkDataEnd(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Int? {
        guard offset < bytes.count else { return nil }
        switch bytes[offset] {
        case 0x0D:
            guard offset + 1 < bytes.count else { return nil }
            return bytes[offset + 1] == 0x0A ? 2 : 0
        case 0x0A where rules.acceptsBareLF:
            return 1
        default:
            return 0
        }
    }

    /// The step for a line scan that found no line.
    private func step(for scan: LineReader.Scan, skip: Int) -> Step {
        switch scan {
        case .failure(let error): .failure(error)
        case .incomplete, .line: .needMoreBytes(skip: skip)
        }
    }
}
