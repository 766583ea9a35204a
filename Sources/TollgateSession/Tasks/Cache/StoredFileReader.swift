import NIOCore
import NIOPosix

/// A stored body read from its file in pieces, paced by the task (suspend stops the reading).
final class StoredFileReader: @unchecked Sendable {
    let handle: NIOFileHandle
    /// Where the bytes served start in the file (a range of a stored body).
    let offset: Int64
    var remaining: Int64
    var reading = false
    /// Whether the task's delegate was offered the whole body as a file region (done once,
    /// before the first read).
    var offeredRegion = false
    /// A file region of this file is being written by the delegate: the handle stays open.
    var regionInFlight = false

    init(handle: NIOFileHandle, offset: Int64 = 0, length: Int64) {
        self.handle = handle
        self.offset = offset
        self.remaining = length
    }
}
