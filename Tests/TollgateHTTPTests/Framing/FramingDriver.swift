import TollgateHTTP

/// Runs the framing core's machines over bytes that arrive in pieces, the way a decoder does:
/// the unconsumed bytes plus each new piece are handed over, and what a step says is consumed.
enum FramingDriver {
    /// What a chunked body came to.
    struct ChunkedOutcome: Equatable, CustomStringConvertible {
        var body: [UInt8] = []
        var trailers: [String] = []
        var ended = false
        var failure: FramingError?
        /// The bytes after the body's end.
        var rest: [UInt8] = []

        var description: String {
            "body \(body.count) bytes, trailers \(trailers), ended \(ended), failure \(String(describing: failure)), rest \(rest.count)"
        }
    }

    /// What a head scan came to: the lengths of leading empty lines and of the head, or a failure.
    struct HeadOutcome: Equatable {
        var emptyLines: [Int] = []
        var headLength: Int?
        var failure: FramingError?
        var rest: [UInt8] = []
    }

    static func chunked(_ pieces: [[UInt8]], rules: FramingRules) -> ChunkedOutcome {
        var decoder = ChunkedBodyDecoder(rules: rules)
        var outcome = ChunkedOutcome()
        var pending: [UInt8] = []
        var pieces = pieces[...]
        while !outcome.ended, let piece = pieces.popFirst() {
            pending += piece
            steps: while true {
                switch pending.withUnsafeBytes({ decoder.next($0) }) {
                case .needMoreBytes(let skip):
                    pending.removeFirst(skip)
                    break steps
                case .body(let skip, let length):
                    outcome.body += pending[skip..<(skip + length)]
                    pending.removeFirst(skip + length)
                case .trailerField(let line, let skip):
                    outcome.trailers.append(String(decoding: pending[line], as: UTF8.self))
                    pending.removeFirst(skip)
                case .end(let skip):
                    pending.removeFirst(skip)
                    outcome.ended = true
                    break steps
                case .failure(let error):
                    outcome.failure = error
                    return outcome
                }
            }
        }
        outcome.rest = pending + pieces.joined()
        return outcome
    }

    static func head(_ pieces: [[UInt8]], rules: FramingRules) -> HeadOutcome {
        var scanner = HeadScanner(rules: rules)
        var outcome = HeadOutcome()
        var pending: [UInt8] = []
        var pieces = pieces[...]
        while outcome.headLength == nil, let piece = pieces.popFirst() {
            pending += piece
            scans: while true {
                switch pending.withUnsafeBytes({ scanner.scan($0) }) {
                case .incomplete:
                    break scans
                case .emptyLine(let length):
                    outcome.emptyLines.append(length)
                    pending.removeFirst(length)
                case .complete(let length):
                    outcome.headLength = length
                    pending.removeFirst(length)
                    break scans
                case .failure(let error):
                    outcome.failure = error
                    return outcome
                }
            }
        }
        outcome.rest = pending + pieces.joined()
        return outcome
    }

    /// `bytes` whole, and cut in two at every position.
    static func everyTwoPieceSplit(_ bytes: [UInt8]) -> [[[UInt8]]] {
        (0...bytes.count).map { cut in [Array(bytes[..<cut]), Array(bytes[cut...])] }
    }
}
