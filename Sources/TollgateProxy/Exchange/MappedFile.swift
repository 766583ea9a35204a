import Foundation
import NIOCore

/// A `map-local` file opened for an answer: its descriptor, and the length and modification
/// time of the file as opened (an edit racing the request cannot make the two disagree).
///
/// The bytes go out as one file region (`sendfile`) or are read piece by piece as the client
/// takes them (``ForwardExchange/pumpMappedFile()``), so a file of any size costs a connection
/// at most ``pieceSize`` of memory at a time.
final class MappedFile: @unchecked Sendable {
    /// What opening a mapped path gave.
    enum Opening: Sendable {
        case file(MappedFile)
        /// Not there (or not a regular file, or unreadable): the answer says which.
        case missing(String)
    }

    /// The bytes read per piece when the file is not sent as a region (the stored bodies' size).
    static let pieceSize = 128 * 1024

    /// The file answering (`index.html` for a directory).
    let path: String
    let handle: NIOFileHandle
    let length: Int64
    let modified: Date
    /// The next byte to read, and the end of the bytes to send (half-open).
    var next: Int64 = 0
    var end: Int64 = 0
    /// A read is on the thread pool.
    var reading = false
    /// The client's socket is full: the next read waits for it to drain.
    var waitingForClient = false
    private var closed = false

    private init(path: String, handle: NIOFileHandle, length: Int64, modified: Date) {
        self.path = path
        self.handle = handle
        self.length = length
        self.modified = modified
    }

    /// Opens `path` (blocking: run it on the thread pool); a directory answers with its
    /// `index.html`. `requestPath` is for the answer's words.
    static func open(_ path: String, for requestPath: String) -> Opening {
        var file = path
        var status = stat()
        if stat(file, &status) == 0, status.st_mode & S_IFMT == S_IFDIR {
            file += "/index.html"
        }
        // O_NONBLOCK: a FIFO in a mapped directory must not hold a pool thread in open() until
        // something writes to it (it is refused below, as anything not a regular file is).
        let descriptor = Glibc.open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else {
            let code = errno
            let why = code == ENOENT || code == ENOTDIR ? "no file" : "cannot read (\(String(cString: strerror(code))))"
            return .missing("map-local: \(why) \(file) for \(requestPath)")
        }
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            Glibc.close(descriptor)
            return .missing("map-local: no file \(file) for \(requestPath)")
        }
        let modified = Date(timeIntervalSince1970: Double(status.st_mtim.tv_sec))
        let handle = NIOFileHandle(_deprecatedTakingOwnershipOfDescriptor: descriptor)
        return .file(MappedFile(path: file, handle: handle, length: Int64(status.st_size), modified: modified))
    }

    /// Closes the file (once; later calls do nothing).
    func close() {
        guard !closed else { return }
        closed = true
        try? handle.close()
    }
}
