import Foundation
import TollgateCache

/// Go's module hashes (`h1:` in go.sum, golang.org/x/mod/sumdb/dirhash `Hash1`): the SHA-256 of a
/// summary that has a line `HEX  NAME` for each file, sorted by name, where HEX is the file's own
/// SHA-256; in base64 after `h1:`. A module's zip is summarized by its entries' names as the zip
/// has them (`MODULE@VERSION/PATH`), its go.mod as one file named `go.mod`.
enum GoModuleHash {
    /// `h1:` of a module zip's bytes.
    static func zip(_ bytes: UnsafeRawBufferPointer) throws -> String {
        let archive = try ZipArchive(bytes)
        // Sorted as Go sorts strings: by their UTF-8 bytes.
        let entries = archive.entries.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
        var summary = MessageDigest(.sha256)
        for entry in entries {
            guard !entry.name.contains("\n") else { throw ZipArchive.Failure(description: "a file name with a newline") }
            var file = MessageDigest(.sha256)
            try archive.read(entry) { file.update($0) }
            summary.update(Array("\(SHA256.hex(file.finalize()))  \(entry.name)\n".utf8))
        }
        return "h1:" + Data(summary.finalize()).base64EncodedString()
    }

    /// `h1:` of a go.mod file's bytes (go.sum's `VERSION/go.mod` lines).
    static func modFile<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        let line = "\(SHA256.hex(MessageDigest.hash(.sha256, bytes)))  go.mod\n"
        return "h1:" + Data(MessageDigest.hash(.sha256, Array(line.utf8))).base64EncodedString()
    }
}
