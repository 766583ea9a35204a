import Foundation
public import NIOCore
import TollgateHTTP

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Streams one response body into the cache; from ``CacheStore/beginStore(key:request:response:requestTime:responseTime:)``.
///
/// The body is hashed (SHA-256) as it arrives. Up to the store's inline limit it stays in
/// memory; past it, it goes to a temporary file in `bodies/`. ``commit()`` checks the length
/// against Content-Length (a truncated or overlong body is never committed), syncs and
/// renames the file, then commits the LMDB transaction that points to it. ``abort()`` (or
/// dropping the writer) discards everything. A body growing past the per-response limit
/// (5 % of capacity) aborts the writer.
///
/// One producer: calls must not overlap (they are serialized by a lock, but the order of
/// appends is the caller's). `append` and `commit` do blocking file I/O: call them off the
/// event loop.
public final class CacheEntryWriter: Sendable {
    /// The phases of a writer.
    enum Phase {
        /// Buffering in memory, up to the inline limit.
        case memory([UInt8])
        /// Spilled to a temporary file.
        case file(name: String, descriptor: Int32)
        /// Committed or aborted.
        case finished
    }

    struct State {
        var phase: Phase = .memory([])
        var length: Int64 = 0
        var hasher = SHA256()
    }

    private let store: CacheStore
    private let id: UInt64
    private let draft: StoredResponse
    private let requestHeaders: HeaderFields
    private let expectedLength: Int64?
    private let limit: Int64
    private let state = Locked(State())
    /// Header fields the `willCacheResponse` delegate chose instead of the received ones.
    private let replacementFields = Locked<HeaderFields?>(nil)

    init(
        store: CacheStore,
        id: UInt64,
        draft: StoredResponse,
        requestHeaders: HeaderFields,
        expectedLength: Int64?,
        limit: Int64
    ) {
        self.store = store
        self.id = id
        self.draft = draft
        self.requestHeaders = requestHeaders
        self.expectedLength = expectedLength
        self.limit = limit
    }

    deinit {
        abort()
    }

    /// The id the entry will have once committed.
    public var entryID: CacheEntryID { CacheEntryID(rawValue: id) }

    /// Stores these header fields instead of the received ones (the `willCacheResponse` delegate
    /// changed the response); hop-by-hop, cookie and private fields are still left out.
    public func replaceHeaderFields(_ fields: HeaderFields) {
        replacementFields.withLock { $0 = fields }
    }

    /// Bytes appended so far.
    public var bytesWritten: Int64 { state.withLock { $0.length } }

    /// Appends the next part of the body.
    ///
    /// - Throws: ``CacheStoreError/bodyTooLarge`` past the per-response limit and
    ///   ``CacheStoreError/truncatedBody`` past Content-Length (the writer is then aborted);
    ///   ``CacheStoreError/writerFinished`` after commit or abort; an I/O error.
    public func append(_ buffer: ByteBuffer) throws {
        try buffer.withUnsafeReadableBytes { bytes in try append(bytes) }
    }

    /// Appends bytes (see ``append(_:)-(ByteBuffer)``).
    public func append(_ bytes: UnsafeRawBufferPointer) throws {
        try state.withLock { state in
            if case .finished = state.phase { throw CacheStoreError.writerFinished }
            let length = state.length + Int64(bytes.count)
            if length > limit {
                Self.discard(&state, files: store.files)
                throw CacheStoreError.bodyTooLarge
            }
            if let expectedLength, length > expectedLength {
                Self.discard(&state, files: store.files)
                throw CacheStoreError.truncatedBody
            }
            do {
                switch state.phase {
                case .memory(var buffered):
                    if buffered.count + bytes.count <= store.options.inlineBodyLimit {
                        state.phase = .finished  // let go of the array while appending: no copy
                        buffered.append(contentsOf: bytes)
                        state.phase = .memory(buffered)
                    } else {
                        let (name, fd) = try store.files.createTemporary(for: id)
                        state.phase = .file(name: name, descriptor: fd)
                        try buffered.withUnsafeBytes { try BodyFiles.write(fd, $0, name: name) }
                        try BodyFiles.write(fd, bytes, name: name)
                    }
                case .file(let name, let fd):
                    try BodyFiles.write(fd, bytes, name: name)
                case .finished:
                    throw CacheStoreError.writerFinished
                }
            } catch {
                Self.discard(&state, files: store.files)
                throw error
            }
            state.hasher.update(bytes)
            state.length = length
        }
    }

    /// Commits the entry: the body must be complete (its length equal to Content-Length when
    /// the response had one). Replaces the variants the same request would have selected and
    /// evicts least recently used entries to stay under the capacity.
    ///
    /// - Returns: the new entry's id.
    /// - Throws: ``CacheStoreError/truncatedBody`` (nothing is committed), I/O or LMDB errors
    ///   (nothing is committed and the body file is removed).
    @discardableResult
    public func commit() throws -> CacheEntryID {
        let (phase, length, digest) = try state.withLock { state -> (Phase, Int64, [UInt8]) in
            if case .finished = state.phase { throw CacheStoreError.writerFinished }
            if let expectedLength, state.length != expectedLength {
                Self.discard(&state, files: store.files)
                throw CacheStoreError.truncatedBody
            }
            let phase = state.phase
            state.phase = .finished
            return (phase, state.length, state.hasher.finalize())
        }
        var response = draft
        if let replacement = replacementFields.withLock({ $0 }) {
            response.headerFields = StoredHeaders.filter(
                replacement, shared: store.options.rules.isShared, keepsCookies: store.options.rules.storesSetCookie
            ).fields
        }
        response.bodyLength = length
        response.bodyDigest = digest
        if !(100..<200).contains(response.status), response.status != 204, response.status != 304 {
            response.headerFields.replaceOrAdd(name: .contentLength, value: String(length))
        }
        switch phase {
        case .memory(let bytes):
            response.bodyLocation = .inline
            return try store.commitVariant(
                id,
                response: response,
                inlineBody: bytes,
                requestHeaders: requestHeaders,
                file: nil
            )
        case .file(let name, let fd):
            let finalName = BodyFiles.finalName(for: id)
            do {
                try store.files.publish(descriptor: fd, temporaryName: name, finalName: finalName)
            } catch {
                store.files.remove(name)
                throw error
            }
            response.bodyLocation = .file(finalName)
            return try store.commitVariant(
                id,
                response: response,
                inlineBody: nil,
                requestHeaders: requestHeaders,
                file: finalName
            )
        case .finished:
            throw CacheStoreError.writerFinished
        }
    }

    /// Keeps what arrived of a body that was cut short as the first piece of a response held
    /// in pieces (RFC 9111 §3.3: a GET's 200 with a strong validator and a Content-Length), so
    /// that a later range request can complete it; then finishes the writer. Nil when the
    /// response cannot be kept in pieces, or nothing arrived. Blocking.
    public func salvageAsPiece() -> PartialPieceWriter.Outcome? {
        let taken = state.withLock { state -> (Phase, Int64)? in
            if case .finished = state.phase { return nil }
            let taken = (state.phase, state.length)
            state.phase = .finished
            return taken
        }
        guard let (phase, length) = taken else { return nil }
        defer { if case .file(let name, let fd) = phase { systemClose(fd); store.files.remove(name) } }
        guard draft.status == 200, length > 0, let expectedLength, length < expectedLength,
            !draft.headerFields.contains(.vary), let validator = CacheRules.combiningValidator(of: draft.headerFields)
        else { return nil }
        var whole = draft
        if let replacement = replacementFields.withLock({ $0 }) {
            whole.headerFields = StoredHeaders.filter(
                replacement, shared: store.options.rules.isShared, keepsCookies: store.options.rules.storesSetCookie
            ).fields
        }
        whole.headerFields.replaceOrAdd(name: .contentLength, value: String(expectedLength))
        guard let piece = try? store.openPiece(key: draft.key, response: whole, start: 0, completeLength: expectedLength, validator: validator)
        else { return nil }
        do {
            switch phase {
            case .memory(let bytes):
                try piece.append(ByteBuffer(bytes: bytes))
            case .file(let name, _):
                try BodyFiles.forEachChunk(ofFileAt: store.files.path(name), length: length) { try piece.append($0) }
            case .finished:
                return nil
            }
            return try piece.finish()
        } catch {
            piece.abort()
            return nil
        }
    }

    /// Discards the body; nothing is stored. Idempotent, and a no-op after commit.
    public func abort() {
        state.withLock { Self.discard(&$0, files: store.files) }
    }

    /// Closes and removes a temporary file, and finishes the writer.
    private static func discard(_ state: inout State, files: BodyFiles) {
        if case .file(let name, let fd) = state.phase {
            systemClose(fd)
            files.remove(name)
        }
        state.phase = .finished
    }
}
