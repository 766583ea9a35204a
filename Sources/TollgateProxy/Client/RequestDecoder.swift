import NIOCore
import TollgateLoop
import TollgateSession

/// A strict HTTP/1.1 request parser for the client side of the proxy: bytes in, request heads,
/// body pieces and ends out, one event at a time.
///
/// A proxy that reads a request differently from the server behind it can be used to smuggle a
/// second request past its checks, so this parser accepts only what has one reading
/// (RFC 9112 §11.2) and refuses the rest with a ``ClientRequestError``, after which it reads
/// nothing more:
/// - both `Content-Length` and `Transfer-Encoding`; `Content-Length` values that differ or are not
///   plain digits; any transfer coding other than a single `chunked`; `Transfer-Encoding` in an
///   HTTP/1.0 request (``RequestHeadParser``);
/// - a bare CR or bare LF as a line end, a NUL or other control byte in the head, obs-fold (a
///   field line starting with whitespace), whitespace before a field's colon, a missing or
///   repeated `Host` in HTTP/1.1;
/// - a chunk size that is not hexadecimal, too large, or not followed by CRLF, and chunk data
///   not followed by CRLF.
///
/// Limits: the request line and field lines together at most `maxHeaderBytes`, and at most
/// `maxHeaders` field lines (431 past either, found as soon as the bytes arrive rather than at
/// the end of the head); the same bounds apply to chunked trailers, which are checked and dropped.
///
/// After a CONNECT head, or the end of a request that asks to upgrade, the decoder stops: what
/// follows belongs to the tunnel or the new protocol (``takeRawBytes()``), or, if the proxy
/// refuses, to nobody.
struct RequestDecoder {
    /// The `limits` that bound a head.
    struct Limits: Sendable {
        var maxHeaderBytes: Int
        var maxHeaders: Int
    }

    /// What the next bytes made.
    enum Event: Hashable, Sendable {
        case head(ClientRequestHead)
        case body(ByteBuffer)
        case end
        case failure(ClientRequestError)
    }

    private enum State {
        /// Reading a head: `scanned` bytes checked, `lines` lines complete, the current line
        /// starting at `lineStart`.
        case head(scanned: Int, lines: Int, lineStart: Int)
        case lengthBody(remaining: Int64)
        case chunkSize
        case chunkData(remaining: Int64)
        case chunkDataEnd
        case trailers(bytes: Int, lines: Int)
        /// After CONNECT or an upgrade: bytes are kept, not parsed.
        case stopped
        case failed
    }

    /// A chunk-size line (size and extensions) longer than this is refused.
    static let maximumChunkLineBytes = 4096

    let limits: Limits
    private var input = ReceivedBytes()
    private var state = State.head(scanned: 0, lines: 0, lineStart: 0)
    /// The previous event was the last piece of a body (or a head without one): `.end` is next.
    private var pendingEnd = false
    /// Set from a head to the end of its message: whether parsing stops after it.
    private var stopsAfterMessage = false

    init(limits: Limits) {
        self.limits = limits
    }

    /// Bytes received and not yet turned into events.
    var bufferedBytes: Int { input.count }

    /// Whether part of a head has arrived and the rest has not (the header-read timeout runs).
    var isInsideHead: Bool {
        if case .head = state, !pendingEnd { return input.count > 0 }
        return false
    }

    /// Whether parsing stopped after CONNECT or an upgrade request.
    var isStopped: Bool {
        if case .stopped = state { return true }
        return false
    }

    /// Adds received bytes.
    mutating func feed(_ bytes: ByteBuffer) {
        if case .failed = state { return }
        input.append(bytes)
    }

    /// The bytes kept after parsing stopped (what the client already sent into its tunnel).
    mutating func takeRawBytes() -> ByteBuffer {
        input.takeAll()
    }

    /// The next event, or nil when more bytes are needed (or parsing stopped or failed).
    mutating func next() -> Event? {
        if pendingEnd {
            pendingEnd = false
            return messageEnded()
        }
        switch state {
        case .head(let scanned, let lines, let lineStart):
            return nextHead(scanned: scanned, lines: lines, lineStart: lineStart)
        case .lengthBody(let remaining):
            guard let piece = input.readPiece(upTo: remaining) else { return nil }
            state = .lengthBody(remaining: remaining - Int64(piece.readableBytes))
            pendingEnd = remaining == Int64(piece.readableBytes)
            return .body(piece)
        case .chunkSize:
            return nextChunkSize()
        case .chunkData(let remaining):
            guard let piece = input.readPiece(upTo: remaining) else { return nil }
            let count = Int64(piece.readableBytes)
            state = remaining == count ? .chunkDataEnd : .chunkData(remaining: remaining - count)
            return .body(piece)
        case .chunkDataEnd:
            guard input.buffer.readableBytes >= 2 else { return nil }
            guard input.buffer.readInteger(as: UInt16.self) == 0x0D0A else {
                return fail(.malformed("chunk data is not followed by CRLF"))
            }
            state = .chunkSize
            return nextChunkSize()
        case .trailers(let bytes, let lines):
            return nextTrailer(bytes: bytes, lines: lines)
        case .stopped, .failed:
            return nil
        }
    }

    // MARK: heads

    private mutating func nextHead(scanned: Int, lines: Int, lineStart: Int) -> Event? {
        switch scanHead(from: scanned, lines: lines, lineStart: lineStart) {
        case .incomplete(let scanned, let lines, let lineStart):
            state = .head(scanned: scanned, lines: lines, lineStart: lineStart)
            return nil
        case .failure(let error):
            return fail(error)
        case .leadingEmptyLine:
            return nil  // not returned by scanHead
        case .complete(let length):
            state = .head(scanned: 0, lines: 0, lineStart: 0)
            let bytes = input.buffer.readSlice(length: length)!
            input.compact()
            switch RequestHeadParser.parse(bytes) {
            case .failure(let error):
                return fail(error)
            case .success(let head):
                return begin(head)
            }
        }
    }

    private enum HeadScan {
        case incomplete(scanned: Int, lines: Int, lineStart: Int)
        case complete(length: Int)
        case leadingEmptyLine
        case failure(ClientRequestError)
    }

    /// Looks for the empty line that ends a head, checking line ends and bytes on the way.
    /// Empty lines before the request line are dropped (RFC 9112 §2.2).
    private mutating func scanHead(from start: Int, lines startLines: Int, lineStart startLine: Int) -> HeadScan {
        let limits = self.limits
        var (start, startLines, startLine) = (start, startLines, startLine)
        while true {
            let outcome = input.buffer.withUnsafeReadableBytes { [start, startLines, startLine] bytes -> HeadScan in
                var index = start
                var lines = startLines
                var lineStart = startLine
                while index < bytes.count {
                    guard index < limits.maxHeaderBytes else {
                        return .failure(.headTooLarge("the request head is larger than \(limits.maxHeaderBytes) bytes"))
                    }
                    switch bytes[index] {
                    case 0x0A:
                        guard index > 0, bytes[index - 1] == 0x0D else {
                            return .failure(.malformed("bare LF in the request head"))
                        }
                        if index - 1 == lineStart {
                            return lines == 0 ? .leadingEmptyLine : .complete(length: index + 1)
                        }
                        lines += 1
                        guard lines <= limits.maxHeaders + 1 else {
                            return .failure(.headTooLarge("more than \(limits.maxHeaders) header fields"))
                        }
                        lineStart = index + 1
                    case 0x0D:
                        // A CR is checked with the byte after it, so scanning stops before a CR
                        // that ends the bytes received so far.
                        guard index + 1 < bytes.count else {
                            return .incomplete(scanned: index, lines: lines, lineStart: lineStart)
                        }
                        if bytes[index + 1] != 0x0A {
                            return .failure(.malformed("bare CR in the request head"))
                        }
                    case 0:
                        return .failure(.malformed("NUL byte in the request head"))
                    default:
                        break
                    }
                    index += 1
                }
                return .incomplete(scanned: index, lines: lines, lineStart: lineStart)
            }
            guard case .leadingEmptyLine = outcome else { return outcome }
            // An empty line before the request line: drop it and look again from the start.
            input.buffer.moveReaderIndex(forwardBy: 2)
            input.compact()
            (start, startLines, startLine) = (0, 0, 0)
        }
    }

    /// Sets up the body of a head just parsed.
    private mutating func begin(_ head: ClientRequestHead) -> Event {
        stopsAfterMessage = head.isConnect || head.isUpgrade
        switch head.framing {
        case .none, .length(0):
            pendingEnd = true
        case .length(let length):
            state = .lengthBody(remaining: length)
        case .chunked:
            state = .chunkSize
        }
        return .head(head)
    }

    /// The message is complete: read the next head, or stop.
    private mutating func messageEnded() -> Event {
        state = stopsAfterMessage ? .stopped : .head(scanned: 0, lines: 0, lineStart: 0)
        stopsAfterMessage = false
        return .end
    }

    // MARK: chunked bodies

    private mutating func nextChunkSize() -> Event? {
        let size: Int64
        switch readLine(limit: Self.maximumChunkLineBytes, what: "chunk size line") {
        case nil:
            return nil
        case .failure(let error):
            return fail(error)
        case .success(let line):
            switch Self.chunkSize(line) {
            case .failure(let error): return fail(error)
            case .success(let value): size = value
            }
        }
        if size == 0 {
            state = .trailers(bytes: 0, lines: 0)
            return nextTrailer(bytes: 0, lines: 0)
        }
        state = .chunkData(remaining: size)
        return next()
    }

    /// `1*HEXDIG [ BWS ";" chunk-ext ]`: the size, or why the line is refused.
    static func chunkSize(_ line: [UInt8]) -> Result<Int64, ClientRequestError> {
        var value: Int64 = 0
        var digits = 0
        var index = 0
        while index < line.count, let digit = hexValue(line[index]) {
            digits += 1
            guard digits <= 15 else { return .failure(.malformed("chunk size too large")) }
            value = value * 16 + Int64(digit)
            index += 1
        }
        guard digits > 0 else { return .failure(.malformed("invalid chunk size")) }
        var rest = line[index...]
        while let first = rest.first, first == 0x20 || first == 0x09 { rest = rest.dropFirst() }
        if let first = rest.first {
            guard first == UInt8(ascii: ";") else { return .failure(.malformed("invalid chunk size")) }
            guard rest.allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }) else {
                return .failure(.malformed("control byte in a chunk extension"))
            }
        }
        return .success(value)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }

    /// Trailer field lines after the last chunk: checked like header fields, counted against the
    /// head limits, and dropped.
    private mutating func nextTrailer(bytes: Int, lines: Int) -> Event? {
        var bytes = bytes
        var lines = lines
        while true {
            let budget = limits.maxHeaderBytes - bytes
            guard budget > 0 else { return fail(.headTooLarge("the trailer section is too large")) }
            switch readLine(limit: budget, what: "trailer section") {
            case nil:
                state = .trailers(bytes: bytes, lines: lines)
                return nil
            case .failure(let error):
                return fail(error)
            case .success(let content):
                bytes += content.count + 2
                if content.isEmpty { return messageEnded() }
                lines += 1
                guard lines <= limits.maxHeaders else {
                    return fail(.headTooLarge("more than \(limits.maxHeaders) trailer fields"))
                }
                if case .failure(let error) = RequestHeadParser.parseField(content[...]) { return fail(error) }
            }
        }
    }

    /// One CRLF-terminated line without its CRLF; nil when it has not fully arrived. A bare CR or
    /// LF, a NUL, or a line longer than `limit` is refused.
    private mutating func readLine(limit: Int, what: String) -> Result<[UInt8], ClientRequestError>? {
        let found: Result<Int, ClientRequestError>? = input.buffer.withUnsafeReadableBytes { bytes in
            var index = 0
            while index < bytes.count {
                switch bytes[index] {
                case 0x0A:
                    guard index > 0, bytes[index - 1] == 0x0D else {
                        return .failure(.malformed("bare LF in the \(what)"))
                    }
                    return .success(index - 1)
                case 0x0D:
                    if index + 1 < bytes.count, bytes[index + 1] != 0x0A {
                        return .failure(.malformed("bare CR in the \(what)"))
                    }
                case 0:
                    return .failure(.malformed("NUL byte in the \(what)"))
                default:
                    break
                }
                index += 1
                if index > limit {
                    return .failure(
                        what == "trailer section"
                            ? .headTooLarge("the trailer section is too large") : .malformed("\(what) too long")
                    )
                }
            }
            return nil
        }
        switch found {
        case nil:
            return nil
        case .failure(let error):
            return .failure(error)
        case .success(let length):
            let line = input.buffer.readBytes(length: length)!
            input.buffer.moveReaderIndex(forwardBy: 2)
            input.compact()
            return .success(line)
        }
    }

    // MARK: helpers

    private mutating func fail(_ error: ClientRequestError) -> Event {
        state = .failed
        input = ReceivedBytes()
        return .failure(error)
    }
}
