import NIOCore
import TollgateHTTP
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
        /// Reading a head.
        case head(HeadScanner)
        case lengthBody(remaining: Int64)
        case chunked(ChunkedBodyDecoder)
        /// After CONNECT or an upgrade: bytes are kept, not parsed.
        case stopped
        case failed
    }

    let limits: Limits
    /// The strict reading of the framing core: what has one reading, nothing else.
    private let rules: FramingRules
    private var input = ReceivedBytes()
    private var state: State
    /// The previous event was the last piece of a body (or a head without one): `.end` is next.
    private var pendingEnd = false
    /// Set from a head to the end of its message: whether parsing stops after it.
    private var stopsAfterMessage = false

    init(limits: Limits) {
        self.limits = limits
        self.rules = .strict(maximumHeadBytes: limits.maxHeaderBytes, maximumHeadFields: limits.maxHeaders)
        self.state = .head(HeadScanner(rules: rules))
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
        case .head(let scanner):
            return nextHead(scanner)
        case .lengthBody(let remaining):
            guard let piece = input.readPiece(upTo: remaining) else { return nil }
            state = .lengthBody(remaining: remaining - Int64(piece.readableBytes))
            pendingEnd = remaining == Int64(piece.readableBytes)
            return .body(piece)
        case .chunked(let decoder):
            return nextChunked(decoder)
        case .stopped, .failed:
            return nil
        }
    }

    // MARK: heads

    private mutating func nextHead(_ scanner: HeadScanner) -> Event? {
        var scanner = scanner
        while true {
            switch input.buffer.withUnsafeReadableBytes({ scanner.scan($0) }) {
            case .incomplete:
                state = .head(scanner)
                return nil
            case .failure(let error):
                return fail(ClientRequestError(error, limits: limits))
            case .emptyLine(let length):
                // An empty line before the request line (RFC 9112 §2.2): dropped.
                input.buffer.moveReaderIndex(forwardBy: length)
                input.compact()
            case .complete(let length):
                state = .head(HeadScanner(rules: rules))
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
            state = .chunked(ChunkedBodyDecoder(rules: rules))
        }
        return .head(head)
    }

    /// The message is complete: read the next head, or stop.
    private mutating func messageEnded() -> Event {
        state = stopsAfterMessage ? .stopped : .head(HeadScanner(rules: rules))
        stopsAfterMessage = false
        return .end
    }

    // MARK: chunked bodies

    /// The next piece of a chunked body, or its end once its trailers (checked like header
    /// fields, and dropped) are read.
    private mutating func nextChunked(_ decoder: ChunkedBodyDecoder) -> Event? {
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
            case .trailerField(let line, let skip):
                let refusal = input.buffer.withUnsafeReadableBytes { bytes -> ClientRequestError? in
                    guard case .failure(let error) = RequestHeadParser.parseField(UnsafeRawBufferPointer(rebasing: bytes[line]))
                    else { return nil }
                    return error
                }
                if let refusal { return fail(refusal) }
                input.buffer.moveReaderIndex(forwardBy: skip)
            case .end(let skip):
                input.buffer.moveReaderIndex(forwardBy: skip)
                input.compact()
                return messageEnded()
            case .failure(let error):
                return fail(ClientRequestError(error, limits: limits))
            }
        }
    }

    // MARK: helpers

    private mutating func fail(_ error: ClientRequestError) -> Event {
        state = .failed
        input = ReceivedBytes()
        return .failure(error)
    }
}
