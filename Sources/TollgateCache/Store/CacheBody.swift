import Foundation
public import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A stored body as a lookup hands it out.
public enum CacheBody: Sendable {
    /// A small body, copied out of the LMDB record.
    case inline(ByteBuffer)
    /// A large body in a file (for sendfile). The file may be removed once the entry is
    /// evicted or replaced: open it promptly, and treat a missing file as a miss; an open
    /// descriptor stays readable after removal.
    case file(path: String, length: Int64)

    /// The body's length in bytes.
    public var length: Int64 {
        switch self {
        case .inline(let buffer): Int64(buffer.readableBytes)
        case .file(_, let length): length
        }
    }

    /// The whole body in memory (reads the file for a file body).
    public func readAll() throws -> ByteBuffer {
        switch self {
        case .inline(let buffer):
            return buffer
        case .file(let path, let length):
            guard let data = FileManager.default.contents(atPath: path) else {
                throw CacheStoreError.io(ENOENT, "cannot read \(path)")
            }
            guard Int64(data.count) == length else { throw CacheStoreError.truncatedBody }
            var buffer = ByteBufferAllocator().buffer(capacity: data.count)
            buffer.writeBytes(data)
            return buffer
        }
    }

    /// The body's `algorithm` digest, its bytes read again (a lockfile's integrity check).
    public func digest(_ algorithm: MessageDigest.Algorithm) throws -> [UInt8] {
        switch self {
        case .inline(let buffer):
            return buffer.withUnsafeReadableBytes { MessageDigest.hash(algorithm, $0) }
        case .file(let path, _):
            return try BodyFiles.digest(atPath: path, algorithm: algorithm).digest
        }
    }

    /// The body's length and SHA-256 as they are now (a file body is read whole, in pieces).
    public func digest() throws -> (length: Int64, digest: [UInt8]) {
        switch self {
        case .inline(let buffer):
            return (Int64(buffer.readableBytes), buffer.withUnsafeReadableBytes { SHA256.hash($0) })
        case .file(let path, _):
            return try BodyFiles.digest(atPath: path)
        }
    }
}
