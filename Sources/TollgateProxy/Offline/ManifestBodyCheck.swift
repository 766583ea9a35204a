import NIOCore
import TollgateCache

/// Hashes a body as it is sent to the client and holds its last piece back until the digest
/// is known: only a body whose length and SHA-256 are the manifest's is sent whole. On a
/// mismatch the exchange closes the connection without the last piece, so the client sees a
/// short body (fewer bytes than `Content-Length`), never a whole different artifact.
struct ManifestBodyCheck {
    let expectedSize: Int64
    let expectedSHA256: String
    private var hasher = SHA256()
    /// Bytes passed so far.
    private(set) var received: Int64 = 0
    private var held: ByteBuffer?

    init(_ entry: CacheManifest.Entry) {
        expectedSize = entry.size
        expectedSHA256 = entry.sha256
    }

    /// Takes the next piece; returns what may be sent now (the piece before it).
    mutating func pass(_ piece: ByteBuffer) -> ByteBuffer? {
        piece.withUnsafeReadableBytes { hasher.update($0) }
        received += Int64(piece.readableBytes)
        let ready = held
        held = piece
        return ready
    }

    /// The body ended: the last piece, and whether the body was the manifest's.
    mutating func finish() -> (last: ByteBuffer?, matches: Bool) {
        let last = held
        held = nil
        let matches = received == expectedSize && SHA256.hex(hasher.finalize()) == expectedSHA256
        return (last, matches)
    }
}
