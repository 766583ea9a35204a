/// Finds the end of an HTTP/1 head (start line, field lines, empty line) in bytes that arrive
/// piece by piece, checking every line end and byte on the way and the head's limits as soon as
/// the bytes arrive rather than at its end.
///
/// A pure state machine: each ``scan(_:)`` takes all the bytes received since the head began
/// and resumes where the last one stopped. Empty lines before the start line are reported apart
/// (``Outcome/emptyLine(length:)``) for the caller to drop (RFC 9112 §2.2); the scanner then
/// starts again on the bytes after them.
package struct HeadScanner: Sendable {
    /// What a scan found.
    package enum Outcome: Hashable, Sendable {
        /// The head has not fully arrived.
        case incomplete
        /// The bytes begin with an empty line (`length` bytes) before any start line.
        case emptyLine(length: Int)
        /// The head is the first `length` bytes, its empty line included.
        case complete(length: Int)
        case failure(FramingError)
    }

    private let rules: FramingRules
    /// Bytes before this are checked.
    private var scanned = 0
    /// Where the current line starts.
    private var lineStart = 0
    /// Complete lines so far (start line included).
    private var lines = 0

    /// A scanner for one head read by `rules`.
    package init(rules: FramingRules) {
        self.rules = rules
    }

    /// Looks at `bytes` (everything received since the head began) for the end of the head.
    /// After ``Outcome/emptyLine(length:)`` or ``Outcome/complete(length:)`` the scanner is ready
    /// for the bytes after those; after a failure it is not used again.
    package mutating func scan(_ bytes: UnsafeRawBufferPointer) -> Outcome {
        // A head's LF may sit at index maximumHeadBytes - 1 on the request side, one further on
        // the response side: one less than a line's slack, as each side counted it.
        let limit = rules.maximumHeadBytes + rules.lineLimitSlack - 1
        while true {
            switch LineReader.scan(
                bytes,
                from: scanned,
                lineStart: lineStart,
                limit: limit,
                acceptsBareLF: rules.acceptsBareLF,
                part: .head
            ) {
            case .incomplete(let position):
                scanned = position
                return .incomplete
            case .failure(let error):
                return .failure(error)
            case .line(let contentEnd, let next):
                if contentEnd == lineStart {
                    let leading = lines == 0
                    self = HeadScanner(rules: rules)
                    return leading ? .emptyLine(length: next) : .complete(length: next)
                }
                lines += 1
                if let maximum = rules.maximumHeadLines, lines > maximum { return .failure(.tooManyLines(.head)) }
                (scanned, lineStart) = (next, next)
            }
        }
    }
}
