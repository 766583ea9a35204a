import Foundation
import NIOCore
import TollgateCache

/// What a lockfile says an artifact's bytes must be: a Subresource Integrity value (npm, Yarn,
/// Cargo, Python's hashes), or one of Go's module hashes (go.sum).
enum ArtifactDigest {
    case integrity(SubresourceIntegrity)
    /// `h1:` of a module zip.
    case goModuleZip(String)
    /// `h1:` of a module's go.mod.
    case goModFile(String)

    /// Nil when `body` is what the lockfile pins; else what the lockfile says and what the body is.
    func mismatch(of body: CacheBody) throws -> (expected: String, actual: String)? {
        switch self {
        case .integrity(let expected):
            let digest = try body.digest(expected.algorithm)
            return expected.matches(digest) ? nil : ("\(expected)", expected.format(digest))
        case .goModFile(let expected):
            let actual = GoModuleHash.modFile(try body.readAll().readableBytesView)
            return actual == expected ? nil : (expected, actual)
        case .goModuleZip(let expected):
            let actual: String
            do {
                actual = try Self.withBytes(of: body) { try GoModuleHash.zip($0) }
            } catch let failure as ZipArchive.Failure {
                return (expected, "not a module zip: \(failure)")
            }
            return actual == expected ? nil : (expected, actual)
        }
    }

    /// The whole body, memory-mapped when it is a file (a module zip may be hundreds of megabytes).
    private static func withBytes<T>(of body: CacheBody, _ read: (UnsafeRawBufferPointer) throws -> T) throws -> T {
        switch body {
        case .inline(let buffer):
            return try buffer.withUnsafeReadableBytes(read)
        case .file(let path, _):
            return try Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped).withUnsafeBytes(read)
        }
    }
}
