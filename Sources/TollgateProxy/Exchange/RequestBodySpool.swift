import Foundation
import NIOCore
import NIOPosix

/// The client's request body as it was relayed, kept so the session can be given it again (a
/// followed 307 or 308, an answered 401, a refused stream): the first 256 KiB in memory, the rest
/// in a temporary file, as nginx and Squid spool bodies — up to `limits.resendable-body`. Past the
/// limit (or when the file cannot be written) nothing is kept, and the body cannot be sent again.
///
/// The file is made with `mkstemp` under the temporary directory (`TMPDIR`, else `/tmp`), mode
/// 0600, and unlinked at once: it holds the descriptor's data alone, and disappears with the
/// exchange, or the process. Writes and reads run on NIO's thread pool (``NonBlockingFileIO``), in
/// order; everything else on the exchange's event loop.
final class RequestBodySpool {
    /// The most bytes kept in memory; past it the body goes to a file.
    static let memoryLimit = 256 * 1024
    /// The size of each piece read back for a replay.
    static let replayPiece = 64 * 1024

    private final class File {
        let handle: NIOFileHandle
        /// Bytes written or queued to be.
        var size: Int64 = 0
        /// Completes when every queued write is done; fails when one failed.
        var written: EventLoopFuture<Void>
        init(handle: NIOFileHandle, on eventLoop: any EventLoop) {
            self.handle = handle
            self.written = eventLoop.makeSucceededVoidFuture()
        }
    }

    private enum Storage {
        case memory([ByteBuffer], bytes: Int)
        case file(File)
        case dropped
    }

    private var storage: Storage = .memory([], bytes: 0)
    /// `limits.resendable-body`.
    let limit: Int64
    let eventLoop: any EventLoop
    /// Counts replays: a newer one stops an older one still reading.
    private var replays = 0

    private static let fileIO = NonBlockingFileIO(threadPool: .singleton)

    init(limit: Int64, eventLoop: any EventLoop) {
        self.limit = limit
        self.eventLoop = eventLoop
    }

    /// Whether all the body so far is kept.
    var isKept: Bool {
        if case .dropped = storage { return false }
        return true
    }

    /// Whether the body went to a file (a replay then reads it back, in turn).
    var isInFile: Bool {
        if case .file = storage { return true }
        return false
    }

    /// Keeps the next piece of the body, or stops keeping past the limit.
    func append(_ piece: ByteBuffer) {
        switch storage {
        case .dropped:
            return
        case .memory(var pieces, let bytes):
            let total = bytes + piece.readableBytes
            guard Int64(total) <= limit else { return drop() }
            if total <= Self.memoryLimit {
                // The array's buffer is uniquely referenced once storage lets it go.
                storage = .dropped
                pieces.append(piece)
                storage = .memory(pieces, bytes: total)
                return
            }
            guard let file = Self.makeFile(on: eventLoop) else { return drop() }
            storage = .file(file)
            for kept in pieces { write(kept, to: file) }
            write(piece, to: file)
        case .file(let file):
            guard file.size + Int64(piece.readableBytes) <= limit else { return drop() }
            write(piece, to: file)
        }
    }

    /// Gives the kept body to `send` in order: at once when in memory; from the file piece by
    /// piece, each read once `send`'s future for the one before completed, and on until the
    /// replay has caught up with what is kept (pieces kept meanwhile included). `ended` is called
    /// then with true — on the event loop, before any later piece is kept — or with false when the
    /// body could not be read back (or stopped being kept). A later replay stops this one.
    func replay(send: @escaping (ByteBuffer) -> EventLoopFuture<Void>, ended: @escaping (Bool) -> Void) {
        replays += 1
        let replay = replays
        switch storage {
        case .dropped:
            ended(false)
        case .memory(let pieces, _):
            for piece in pieces { _ = send(piece) }
            ended(true)
        case .file:
            readBack(from: 0, replay: replay, send: send, ended: ended)
        }
    }

    /// Closes the file (the exchange is over).
    func close() {
        if case .file(let file) = storage {
            // After the writes under way: the thread pool must not write to a closed descriptor.
            file.written.whenComplete { _ in try? file.handle.close() }
        }
        storage = .dropped
    }

    private func readBack(
        from offset: Int64, replay: Int, send: @escaping (ByteBuffer) -> EventLoopFuture<Void>, ended: @escaping (Bool) -> Void
    ) {
        guard replay == replays else { return }
        guard case .file(let file) = storage else { return ended(false) }
        guard offset < file.size else { return ended(true) }
        let count = Int(min(Int64(Self.replayPiece), file.size - offset))
        let loop = eventLoop
        file.written.flatMap {
            Self.fileIO.read(fileHandle: file.handle, fromOffset: offset, byteCount: count, allocator: ByteBufferAllocator(), eventLoop: loop)
        }.flatMap { (piece: ByteBuffer) -> EventLoopFuture<Int> in
            guard piece.readableBytes == count else {
                return loop.makeFailedFuture(SpoolReadError())
            }
            return send(piece).map { count }
        }.whenComplete { [self] result in
            switch result {
            case .success(let read): readBack(from: offset + Int64(read), replay: replay, send: send, ended: ended)
            case .failure: if replay == replays { ended(false) }
            }
        }
    }

    private func write(_ piece: ByteBuffer, to file: File) {
        let offset = file.size
        file.size += Int64(piece.readableBytes)
        let loop = eventLoop
        file.written = file.written.flatMap {
            Self.fileIO.write(fileHandle: file.handle, toOffset: offset, buffer: piece, eventLoop: loop)
        }
        file.written.whenFailure { [self] _ in
            // A full disk: the body is no longer kept whole.
            if case .file(let current) = storage, current === file { drop() }
        }
    }

    private func drop() {
        close()
    }

    /// A new unlinked file, mode 0600, under the temporary directory; nil when one cannot be made.
    private static func makeFile(on eventLoop: any EventLoop) -> File? {
        let directory = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array("\(directory)/tollgate-body-XXXXXX".utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else { return nil }
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        return File(handle: NIOFileHandle(_deprecatedTakingOwnershipOfDescriptor: descriptor), on: eventLoop)
    }
}

/// A spooled body read back shorter than it was written.
private struct SpoolReadError: Error {}
