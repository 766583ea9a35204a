public import NIOCore
public import TollgateHTTP

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes one piece of a response held in pieces (``CacheStore/beginPiece(key:request:response:requestTime:responseTime:)``)
/// into its sparse file at the piece's offset.
///
/// ``finish()`` records the bytes written so far — the whole piece, or what arrived before the
/// connection was cut: bytes received in order from the origin are correct bytes — and combines
/// the pieces when they now cover the whole body. ``abort()`` records nothing. Blocking file
/// I/O: call off the event loop. One producer.
public final class PartialPieceWriter: Sendable {
    /// What became of a finished piece.
    public enum Outcome: Sendable, Equatable {
        /// Kept; `presentBytes` of the whole are now held.
        case kept(presentBytes: Int64)
        /// The pieces covered the whole body and were stored as this complete entry.
        case combined(CacheEntryID)
        /// Another response (other validator or length) replaced this one meanwhile.
        case superseded
    }

    struct State {
        var written: Int64 = 0
        var descriptor: Int32
        var finished = false
        /// Header fields the `willCacheResponse` answer chose instead of the received ones.
        var replacement: HeaderFields?
    }

    private let store: CacheStore
    /// The response's cache key.
    public let key: CacheKey
    private let fileName: String
    /// Where the piece starts in the whole body.
    public let start: Int64
    /// How many bytes the piece may hold (up to the end of the whole body).
    private let limit: Int64
    /// The validator pieces must share to be combined with this one ("" for none).
    private let validator: String
    private let state: Locked<State>

    init(
        store: CacheStore, key: CacheKey, fileName: String, descriptor: Int32, start: Int64, limit: Int64, validator: String
    ) {
        self.store = store
        self.key = key
        self.fileName = fileName
        self.start = start
        self.limit = limit
        self.validator = validator
        self.state = Locked(State(descriptor: descriptor))
    }

    deinit { abort() }

    /// Records these header fields (less Content-Range) for the whole response instead of the
    /// received ones (the `willCacheResponse` answer changed them, e.g. forced freshness).
    public func replaceHeaderFields(_ fields: HeaderFields) {
        state.withLock { $0.replacement = fields }
    }

    /// The fields given to ``replaceHeaderFields(_:)``, if any.
    public var replacementFields: HeaderFields? { state.withLock { $0.replacement } }

    /// Bytes written so far.
    public var bytesWritten: Int64 { state.withLock { $0.written } }

    /// Writes the next bytes of the piece.
    ///
    /// - Throws: ``CacheStoreError/truncatedBody`` past the end of the whole body (the writer
    ///   is aborted), ``CacheStoreError/writerFinished``, an I/O error.
    public func append(_ buffer: ByteBuffer) throws {
        try state.withLock { state in
            guard !state.finished else { throw CacheStoreError.writerFinished }
            guard state.written + Int64(buffer.readableBytes) <= limit else {
                Self.close(&state)
                throw CacheStoreError.truncatedBody
            }
            try buffer.withUnsafeReadableBytes { bytes in
                var done = 0
                while done < bytes.count {
                    let count = pwrite(state.descriptor, bytes.baseAddress! + done, bytes.count - done, off_t(start + state.written + Int64(done)))
                    if count < 0 {
                        if errno == EINTR { continue }
                        let error = errno
                        Self.close(&state)
                        throw CacheStoreError.io(error, "cannot write \(fileName)")
                    }
                    done += count
                }
            }
            state.written += Int64(buffer.readableBytes)
        }
    }

    /// Syncs the bytes written and records them; combines the pieces when they are whole.
    @discardableResult
    public func finish() throws -> Outcome {
        let (written, replacement, descriptor) = try state.withLock { state -> (Int64, HeaderFields?, Int32) in
            guard !state.finished else { throw CacheStoreError.writerFinished }
            guard fsync(state.descriptor) == 0 else {
                let error = errno
                Self.close(&state)
                throw CacheStoreError.io(error, "cannot sync \(fileName)")
            }
            // Finished, and the descriptor kept open for recording: the bytes may have to be
            // copied to the file another piece was filed with (even when this one is gone).
            state.finished = true
            return (state.written, state.replacement, state.descriptor)
        }
        defer { systemClose(descriptor) }
        let outcome = try store.recordPiece(
            key: key, fileName: fileName, range: start..<(start + written), replacementFields: replacement,
            validator: validator, completeLength: start + limit, source: descriptor
        )
        if case .combined = outcome { return outcome }
        // Another piece may have made the response whole meanwhile — a cut download's salvaged
        // prefix, recorded off the loop while its resume's 206 was arriving: then this piece's
        // response is in the cache, and what it left in pieces is redundant.
        return store.settledByWholeEntry(key: key, validator: validator, completeLength: start + limit) ?? outcome
    }

    /// Records nothing (the bytes written stay unaccounted and are overwritten or removed later).
    public func abort() {
        state.withLock { Self.close(&$0) }
    }

    private static func close(_ state: inout State) {
        guard !state.finished else { return }
        state.finished = true
        systemClose(state.descriptor)
    }
}
