import Foundation
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The `bodies/` directory of a cache: large bodies, one file per variant.
///
/// A body is written to `tmp-<id>-<random>`, synced, renamed to `<id>.body` and the directory
/// synced, all *before* the LMDB transaction that points at it commits. So after a crash an
/// entry never points at a partial file; at worst a file has no entry, and `sweep` removes
/// it when the store next opens.
struct BodyFiles: Sendable {
    /// The directory's path.
    let directory: String

    /// The final name of a variant's body file.
    static func finalName(for id: UInt64) -> String {
        let hex = String(id, radix: 16)
        return String(repeating: "0", count: max(0, 16 - hex.count)) + hex + ".body"
    }

    /// The variant id a final name encodes, or nil for any other name.
    static func id(fromFinalName name: String) -> UInt64? {
        guard name.hasSuffix(".body"), name.utf8.count == 21 else { return nil }
        return UInt64(name.dropLast(5), radix: 16)
    }

    static let temporaryPrefix = "tmp-"
    /// The names of partial-content files (``PartialContent``): `partial-<id>.part`.
    static let partialPrefix = "partial-"

    static func partialName(for id: UInt64) -> String { partialPrefix + String(id, radix: 16) + ".part" }

    func path(_ name: String) -> String { directory + "/" + name }

    /// Creates the directory if missing.
    func create(mode: mode_t = 0o700) throws {
        if mkdir(directory, mode) != 0, errno != EEXIST {
            throw CacheStoreError.io(errno, "cannot create \(directory)")
        }
    }

    /// Opens a new temporary file for writing: its name and descriptor.
    func createTemporary(for id: UInt64) throws -> (name: String, descriptor: Int32) {
        let name =
            Self.temporaryPrefix + String(id, radix: 16) + "-" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
        let fd = open(path(name), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw CacheStoreError.io(errno, "cannot create \(path(name))") }
        return (name, fd)
    }

    /// Writes all of `bytes` to `fd`.
    static func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, name: String) throws {
        var offset = 0
        while offset < bytes.count {
            let written = systemWrite(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                throw CacheStoreError.io(errno, "cannot write \(name)")
            }
            offset += written
        }
    }

    /// Syncs and closes a finished temporary file, then renames it to its final name and
    /// syncs the directory, so the name is durable before anything points at it.
    func publish(descriptor fd: Int32, temporaryName: String, finalName: String) throws {
        guard fsync(fd) == 0 else {
            let error = errno
            systemClose(fd)
            throw CacheStoreError.io(error, "cannot sync \(temporaryName)")
        }
        systemClose(fd)
        guard rename(path(temporaryName), path(finalName)) == 0 else {
            throw CacheStoreError.io(errno, "cannot rename \(temporaryName) to \(finalName)")
        }
        try syncDirectory()
    }

    /// fsync on the directory, making renames and unlinks in it durable.
    func syncDirectory() throws {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw CacheStoreError.io(errno, "cannot open \(directory)") }
        defer { systemClose(fd) }
        guard fsync(fd) == 0 else { throw CacheStoreError.io(errno, "cannot sync \(directory)") }
    }

    /// Removes a file, ignoring a missing one.
    func remove(_ name: String) {
        unlink(path(name))
    }

    /// The names in the directory.
    func names() -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
    }

    /// Reads the first `length` bytes of the file at `path` in pieces of 256 KiB.
    static func forEachChunk(ofFileAt path: String, length: Int64, _ body: (ByteBuffer) throws -> Void) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CacheStoreError.io(errno, "cannot open \(path)") }
        defer { systemClose(fd) }
        var remaining = length
        var buffer = ByteBufferAllocator().buffer(capacity: 256 << 10)
        while remaining > 0 {
            buffer.clear()
            let wanted = Int(min(remaining, 256 << 10))
            let count = try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: wanted) { out -> Int in
                let count = read(fd, out.baseAddress, wanted)
                if count < 0 { throw CacheStoreError.io(errno, "cannot read \(path)") }
                return count
            }
            if count == 0 { throw CacheStoreError.truncatedBody }
            remaining -= Int64(count)
            try body(buffer)
        }
    }

    /// Copies the bytes at `range` of the file open on `source` to the same offsets of the file at
    /// `path`, and syncs that file (a piece moved into the file another piece of its response
    /// was filed with).
    static func copyRange(_ range: Range<Int64>, from source: Int32, toFileAt path: String) throws {
        let target = open(path, O_WRONLY | O_CLOEXEC)
        guard target >= 0 else { throw CacheStoreError.io(errno, "cannot open \(path)") }
        defer { systemClose(target) }
        // The copy is sequential: one seek, then ``write(_:_:name:)`` for each piece read.
        guard lseek(target, off_t(range.lowerBound), SEEK_SET) >= 0 else {
            throw CacheStoreError.io(errno, "cannot seek in \(path)")
        }
        var buffer = [UInt8](repeating: 0, count: 256 << 10)
        var offset = range.lowerBound
        while offset < range.upperBound {
            let wanted = Int(min(range.upperBound - offset, Int64(buffer.count)))
            let count = buffer.withUnsafeMutableBytes { pread(source, $0.baseAddress, wanted, off_t(offset)) }
            if count < 0 { throw CacheStoreError.io(errno, "cannot read a piece to copy it to \(path)") }
            if count == 0 { throw CacheStoreError.truncatedBody }
            try buffer.withUnsafeBytes { try write(target, UnsafeRawBufferPointer(rebasing: $0[..<count]), name: path) }
            offset += Int64(count)
        }
        guard fsync(target) == 0 else { throw CacheStoreError.io(errno, "cannot sync \(path)") }
    }

    /// The SHA-256 and length of a file's contents.
    func digest(of name: String) throws -> (length: Int64, digest: [UInt8]) {
        try Self.digest(atPath: path(name))
    }

    /// The SHA-256 and length of the contents of the file at `path`.
    static func digest(atPath path: String, algorithm: MessageDigest.Algorithm = .sha256) throws -> (length: Int64, digest: [UInt8]) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CacheStoreError.io(errno, "cannot open \(path)") }
        defer { systemClose(fd) }
        var hasher = MessageDigest(algorithm)
        var length: Int64 = 0
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 16)
        defer { chunk.deallocate() }
        while true {
            let count = read(fd, chunk.baseAddress, chunk.count)
            if count < 0 {
                if errno == EINTR { continue }
                throw CacheStoreError.io(errno, "cannot read \(path)")
            }
            if count == 0 { break }
            hasher.update(UnsafeRawBufferPointer(rebasing: chunk[0..<count]))
            length += Int64(count)
        }
        return (length, hasher.finalize())
    }
}

/// `write(2)`, named apart from the methods called `write`.
func systemWrite(_ fd: Int32, _ pointer: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
    Glibc.write(fd, pointer, count)
    #elseif canImport(Musl)
    Musl.write(fd, pointer, count)
    #else
    Darwin.write(fd, pointer, count)
    #endif
}

/// `close(2)`, named apart from the methods called `close`.
func systemClose(_ fd: Int32) {
    #if canImport(Glibc)
    _ = Glibc.close(fd)
    #elseif canImport(Musl)
    _ = Musl.close(fd)
    #else
    _ = Darwin.close(fd)
    #endif
}
