import Foundation
import Testing
import TollgateCache
import TollgateHTTP

/// Records of the cache's LMDB store that FuzzStoredEntry (Fuzz/, `make fuzz`) found mishandled.
@Suite("Stored records found by fuzzing", .timeLimit(.minutes(1)))
struct StoredResponseFuzzFindingsTests {
    /// The sample record with its header-field count (a varint) replaced by `count`, spelled
    /// in five bytes.
    static func record(fieldCount count: UInt32) throws -> [UInt8] {
        var record = StoredResponseCodingTests.sample(location: .inline).encodedMetadata() + [1, 2, 3]
        // version, flags, status, four dates, body length, SHA-256: 76 bytes; then key, URL and
        // reason, each a one-byte length (all shorter than 128 bytes here) and its bytes.
        var offset = 76
        for _ in 0..<3 { offset += 1 + Int(record[offset]) }
        try #require(record[offset] == 4)  // the sample's four field lines
        let fiveBytes: [UInt8] = (0..<5).map { index in
            let bits = UInt8(truncatingIfNeeded: count >> (7 * UInt32(index))) & 0x7F
            return index < 4 ? bits | 0x80 : bits
        }
        record.replaceSubrange(offset...offset, with: fiveBytes)
        return record
    }

    @Test("The count rewritten in five bytes still names the sample's four fields")
    func countRespelled() throws {
        let decoded = try #require(StoredResponse.decode(record: try Self.record(fieldCount: 4)))
        #expect(decoded == StoredResponseCodingTests.sample(location: .inline))
    }

    /// Before the fix the decoder reserved room for 2^31 − 1 field lines (64 bytes each, 137 GB)
    /// before reading any: malloc refused (the heuristic overcommit of Linux refuses more than RAM
    /// and swap) and the process crashed. After a crash or a disk error LMDB can hand back such a
    /// record.
    @Test("A record whose field count is damaged is refused without reserving room for that many fields")
    func damagedFieldCount() throws {
        #expect(StoredResponse.decode(record: try Self.record(fieldCount: UInt32(Int32.max))) == nil)
        #expect(StoredResponse.decode(record: try Self.record(fieldCount: 75_892_115)) == nil)
    }
}
