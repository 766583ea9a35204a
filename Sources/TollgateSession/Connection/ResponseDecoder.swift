import NIOCore
import TollgateHTTP
import TollgateLoop

/// The HTTP/1.1 response parser of an origin connection: bytes in, the response head (as
/// Tollgate's ``HTTPResponseHead``), body pieces and the end out.
///
/// Why our own: SwiftNIO's decoder builds its own header type, which the session then copied
/// field by field into ``HeaderFields`` — two strings and an array slot per field, per response.
/// This one makes the session's head directly from the bytes.
///
/// Framing follows RFC 9112 §6.3: no body after a HEAD request or for 1xx, 204 and 304; then
/// `Transfer-Encoding` (chunked last: chunked; otherwise the body runs to the close), then
/// `Content-Length` (a list of equal values is one value; anything else is an error), else the
/// body runs to the close. Interim responses (100, 103 …) are handed on as such (``Event/interim(_:)``); after a 101 the
/// decoder stops and keeps what follows for the new protocol (``takeRemainingBytes()``).
///
/// Line ends, chunked bodies and trailers are read by the framing core of TollgateHTTP
/// (``HeadScanner``, ``ChunkedBodyDecoder``) with its lenient rules (``FramingRules/lenient(maximumHeadBytes:)``).
/// Lenient where RFC 9112 lets a recipient be: a bare LF ends a line (§2.2), obs-fold becomes a
/// space (§5.2), whitespace before a field's colon is removed, bytes that are not UTF-8 in a
/// value are replaced (the session's header values are strings). Refused: a NUL or a bare CR, a
/// status line that is not `HTTP/1.x NNN [reason]`, a field name that is not a token, an invalid
/// chunk size, a head over ``maximumHeadBytes`` or ``maximumFields``.
struct ResponseDecoder {
    /// What the next bytes made.
    enum Event {
        case head(HTTPResponseHead)
        /// An interim (1xx other than 101) response; the final head follows.
        case interim(HTTPResponseHead)
        case body(ByteBuffer)
        /// The message ended; `reusable`: its framing and `Connection` allow another on the
        /// connection (a response that ran to the close, or says `close`, does not).
        case end(reusable: Bool)
    }

    /// Why the response cannot be read.
    struct Failure: Error, Equatable {
        let message: String
    }

    /// The status line and field lines of a head (and of a trailer section) together.
    static let maximumHeadBytes = 128 * 1024
    static let maximumFields = 1000
    /// The lenient reading of the framing core.
    private static let rules = FramingRules.lenient(maximumHeadBytes: maximumHeadBytes)

    private enum State {
        /// Waiting for a head.
        case head(HeadScanner)
        case lengthBody(remaining: Int64)
        case chunked(ChunkedBodyDecoder)
        case untilClose
        /// After a 101: the bytes belong to the new protocol.
        case upgraded
        case failed
    }

    private var input = ReceivedBytes()
    private var state = State.head(HeadScanner(rules: rules))
    /// The end of the current message is the next event.
    private var pendingEnd = false
    /// Whether the current message leaves the connection usable.
    private var reusable = false
    /// Set by the connection for each request: a HEAD's response has no body.
    var requestIsHead = false

    /// Bytes received and not yet turned into events.
    var bufferedBytes: Int { input.count }

    /// Adds received bytes.
    mutating func feed(_ bytes: ByteBuffer) {
        if case .failed = state { return }
        input.append(bytes)
    }

    /// The bytes after a 101 (the new protocol's first bytes).
    mutating func takeRemainingBytes() -> ByteBuffer {
        input.takeAll()
    }

    /// The connection reached its end of input: the end of a body that runs to the close, nil
    /// between messages; a failure inside one.
    mutating func inputEnded() throws(Failure) -> Event? {
        if pendingEnd { return try next() }
        switch state {
        case .untilClose:
            state = .failed
            return .end(reusable: false)
        case .head where input.buffer.readableBytes == 0, .upgraded, .failed:
            return nil
        default:
            state = .failed
            throw Failure(message: "the connection closed before the response was complete")
        }
    }

    /// The next event, or nil when more bytes are needed.
    mutating func next() throws(Failure) -> Event? {
        if pendingEnd {
            pendingEnd = false
            if case .upgraded = state {} else { state = .head(HeadScanner(rules: Self.rules)) }
            return .end(reusable: reusable)
        }
        switch state {
        case .head(let scanner):
            return try nextHead(scanner)
        case .lengthBody(let remaining):
            guard let piece = input.readPiece(upTo: remaining) else { return nil }
            state = .lengthBody(remaining: remaining - Int64(piece.readableBytes))
            pendingEnd = remaining == Int64(piece.readableBytes)
            return .body(piece)
        case .untilClose:
            guard let piece = input.readPiece(upTo: Int64.max) else { return nil }
            return .body(piece)
        case .chunked(let decoder):
            return try nextChunked(decoder)
        case .upgraded, .failed:
            return nil
        }
    }

    // MARK: heads

    private mutating func nextHead(_ scanner: HeadScanner) throws(Failure) -> Event? {
        var scanner = scanner
        while true {
            switch input.buffer.withUnsafeReadableBytes({ scanner.scan($0) }) {
            case .incomplete:
                state = .head(scanner)
                return nil
            case .failure(let error):
                throw fail(Failure(error))
            case .emptyLine(let length):
                // An empty line before a status line (RFC 9112 §2.2): dropped.
                input.buffer.moveReaderIndex(forwardBy: length)
                input.compact()
            case .complete(let length):
                state = .head(HeadScanner(rules: Self.rules))
                let bytes = input.buffer.readSlice(length: length)!
                input.compact()
                // A head that cannot be read fails the decoder like any other refusal: nothing
                // after it is read (found by FuzzResponseDecoder: the next response was).
                let parsed: HTTPResponseHead?
                do { parsed = try Self.parseHead(bytes) } catch { throw fail(error) }
                guard let head = parsed else { continue }
                if (100..<200).contains(head.status) && head.status != 101 {
                    return .interim(head)  // the final one follows: the state stays at a head
                }
                try begin(head)
                return .head(head)
            }
        }
    }

    /// Parses one head (its lines end with LF or CRLF; the last line is empty). Nil when the
    /// bytes are only an empty line (which may precede a status line).
    static func parseHead(_ bytes: ByteBuffer) throws(Failure) -> HTTPResponseHead? {
        let parsed = bytes.withUnsafeReadableBytes { raw -> Result<HTTPResponseHead?, Failure> in
            var statusLine: (version: String, status: Int, reason: String)?
            var fields = HeaderFields(capacityForHead: raw)
            // The last field line read: added once the next line shows it is not continued.
            var pending: (name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)?
            var folded: [UInt8]?  // the pending value with its obs-fold continuations
            var fieldCount = 0
            for line in HeadLines(raw) {
                if line.isEmpty { break }
                guard statusLine != nil else {
                    guard let parsed = parseStatusLine(line) else {
                        return .failure(Failure(message: "invalid status line \"\(FramingError.printable(line))\""))
                    }
                    statusLine = parsed
                    continue
                }
                if line[0] == 0x20 || line[0] == 0x09 {
                    // obs-fold: the line continues the previous field's value.
                    guard let field = pending else { return .failure(Failure(message: "a field line starts with whitespace")) }
                    let more = trimmed(line)
                    if !more.isEmpty {
                        if folded == nil { folded = Array(field.value) }
                        folded!.append(UInt8(ascii: " "))
                        folded!.append(contentsOf: more)
                    }
                    continue
                }
                // One pass over the name: token bytes, then blanks, then the colon. Anything else
                // is refused below, by the first colon of the line as before.
                var nameEnd = 0
                while nameEnd < line.count, FieldList.isTokenByte(line[nameEnd]) { nameEnd += 1 }
                var colon = nameEnd
                while colon < line.count, line[colon] == 0x20 || line[colon] == 0x09 { colon += 1 }
                guard nameEnd > 0, colon < line.count, line[colon] == UInt8(ascii: ":") else {
                    return .failure(Self.invalidFieldLine(line))
                }
                let name = UnsafeRawBufferPointer(rebasing: line[0..<nameEnd])
                fieldCount += 1
                guard fieldCount <= maximumFields else {
                    return .failure(Failure(message: "more than \(maximumFields) header fields"))
                }
                if let field = pending { addPending(field, folded: &folded, to: &fields) }
                pending = (name, trimmed(UnsafeRawBufferPointer(rebasing: line[(colon + 1)...])))
            }
            if let field = pending { addPending(field, folded: &folded, to: &fields) }
            guard let statusLine else { return .success(nil) }
            return .success(
                HTTPResponseHead(
                    status: statusLine.status,
                    reason: statusLine.reason,
                    version: statusLine.version,
                    headerFields: fields
                )
            )
        }
        switch parsed {
        case .success(let head): return head
        case .failure(let failure): throw failure
        }
    }

    /// Why a field line whose name is not a token followed by a colon is refused.
    private static func invalidFieldLine(_ line: UnsafeRawBufferPointer) -> Failure {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
            return Failure(message: "a field line without a colon: \"\(FramingError.printable(line))\"")
        }
        var nameEnd = colon
        while nameEnd > 0, line[nameEnd - 1] == 0x20 || line[nameEnd - 1] == 0x09 { nameEnd -= 1 }
        return Failure(message: "invalid field name \"\(FramingError.printable(UnsafeRawBufferPointer(rebasing: line[0..<nameEnd])))\"")
    }

    /// `HTTP/1.x SP 3DIGIT [SP reason]`; a missing reason is allowed with or without its space.
    private static func parseStatusLine(_ line: UnsafeRawBufferPointer) -> (version: String, status: Int, reason: String)? {
        guard line.count >= 12, line.starts(with: "HTTP/1.".utf8), line[8] == 0x20,
            line[7] == UInt8(ascii: "0") || line[7] == UInt8(ascii: "1")
        else { return nil }
        var status = 0
        for index in 9..<12 {
            guard (0x30...0x39).contains(line[index]) else { return nil }
            status = status * 10 + Int(line[index] - 0x30)
        }
        guard status >= 100 else { return nil }
        var reason = ""
        if line.count > 12 {
            guard line[12] == 0x20 || line[12] == 0x09 else { return nil }
            reason = String(decoding: UnsafeRawBufferPointer(rebasing: line[13...]), as: UTF8.self)
        }
        return (line[7] == UInt8(ascii: "1") ? "HTTP/1.1" : "HTTP/1.0", status, reason)
    }

    /// Sets up the body of a head just parsed (RFC 9112 §6.3).
    private mutating func begin(_ head: HTTPResponseHead) throws(Failure) {
        let fields = head.headerFields
        var keepAlive = head.version == "HTTP/1.1"
        if fields.contains(.connection) {
            keepAlive = keepAlive
                ? !fields.listContains(.connection, token: "close") : fields.listContains(.connection, token: "keep-alive")
        }
        if head.status == 101 {
            reusable = false
            pendingEnd = true
            state = .upgraded
            return
        }
        if requestIsHead || head.status == 204 || head.status == 304 {
            reusable = keepAlive
            pendingEnd = true
            return
        }
        if fields.contains(.transferEncoding) {
            let codings = FieldList.elements(fields.values(for: .transferEncoding))
            if codings.last?.lowercased() == "chunked" {
                // With Content-Length beside it the message may be read differently downstream:
                // this connection carries nothing more (RFC 9112 §6.1).
                reusable = keepAlive && !fields.contains(.contentLength)
                state = .chunked(ChunkedBodyDecoder(rules: Self.rules))
            } else {
                reusable = false
                state = .untilClose
            }
            return
        }
        if fields.contains(.contentLength) {
            guard let length = Self.contentLength(fields) else {
                throw fail("invalid Content-Length \"\(fields.values(for: .contentLength).joined(separator: ", "))\"")
            }
            reusable = keepAlive
            if length == 0 {
                pendingEnd = true
            } else {
                state = .lengthBody(remaining: length)
            }
            return
        }
        reusable = false
        state = .untilClose
    }

    /// One length from the `Content-Length` lines: digits only; a list of equal values is one.
    static func contentLength(_ fields: HeaderFields) -> Int64? {
        // The usual field: lines of the same digits (read in place, no strings for it).
        if let length = fields.contentLength { return length }
        let values = fields.values(for: .contentLength)
        var length: Int64?
        for value in values {
            for element in value.split(separator: ",", omittingEmptySubsequences: false) {
                let digits = element.utf8.drop { $0 == 0x20 || $0 == 0x09 }.reversed().drop { $0 == 0x20 || $0 == 0x09 }
                guard !digits.isEmpty, digits.count <= 18, digits.allSatisfy({ (0x30...0x39).contains($0) }) else {
                    return nil
                }
                let number = digits.reversed().reduce(Int64(0)) { $0 * 10 + Int64($1 - 0x30) }
                if let length, length != number { return nil }
                length = number
            }
        }
        return length
    }

    // MARK: chunked bodies

    /// The next piece of a chunked body, or its end once its trailers are read and dropped (the
    /// session has no use for them and the proxy's client framing carries none).
    private mutating func nextChunked(_ decoder: ChunkedBodyDecoder) throws(Failure) -> Event? {
        var decoder = decoder
        while true {
            let step = input.buffer.withUnsafeReadableBytes { decoder.next($0) }
            switch step {
            case .needMoreBytes(let skip):
                input.buffer.moveReaderIndex(forwardBy: skip)
                input.compact()
                state = .chunked(decoder)
                return nil
            case .body(let skip, let length):
                input.buffer.moveReaderIndex(forwardBy: skip)
                let piece = input.buffer.readSlice(length: length)!
                input.compact()
                state = .chunked(decoder)
                return .body(piece)
            case .trailerField(_, let skip):
                input.buffer.moveReaderIndex(forwardBy: skip)
            case .end(let skip):
                input.buffer.moveReaderIndex(forwardBy: skip)
                input.compact()
                state = .head(HeadScanner(rules: Self.rules))
                return .end(reusable: reusable)
            case .failure(let error):
                throw fail(Failure(error))
            }
        }
    }

    // MARK: helpers

    private mutating func fail(_ message: String) -> Failure {
        fail(Failure(message: message))
    }

    private mutating func fail(_ failure: Failure) -> Failure {
        state = .failed
        input = ReceivedBytes()
        return failure
    }

    /// Adds a field line read by ``parseHead(_:)``, with its folded value when it had one.
    private static func addPending(
        _ field: (name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer),
        folded: inout [UInt8]?,
        to fields: inout HeaderFields
    ) {
        if let value = folded {
            value.withUnsafeBytes { fields.add(name: field.name, value: $0) }
            folded = nil
        } else {
            fields.add(name: field.name, value: field.value)
        }
    }

    private static func trimmed(_ bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        var start = 0
        var end = bytes.count
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
        while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
        return UnsafeRawBufferPointer(rebasing: bytes[start..<end])
    }
}
