import Foundation
import NIOCore
import Testing
import TollgateHTTP

@testable import TollgateCache

@Suite("Decoded records are reused only while their bytes are unchanged", .timeLimit(.minutes(1)))
struct DecodedRecordsTests {
    private func decode(
        _ memo: DecodedRecords,
        id: UInt64,
        _ record: [UInt8],
        lastAccess: Date? = nil
    ) -> (StoredResponse, Range<Int>?)? {
        record.withUnsafeBytes { memo.decode(id: id, record: $0, lastAccess: lastAccess) }.map { ($0.response, $0.inlineBody) }
    }

    private func record(_ response: StoredResponse, body: [UInt8] = [1, 2, 3]) -> [UInt8] {
        response.encodedMetadata() + (response.bodyLocation == .inline ? body : [])
    }

    @Test("The same record decodes to the same response, once remembered")
    func sameRecord() throws {
        let memo = DecodedRecords()
        let bytes = record(StoredResponseCodingTests.sample(location: .inline))
        let first = try #require(decode(memo, id: 7, bytes))
        let second = try #require(decode(memo, id: 7, bytes))
        #expect(first.0 == second.0)
        #expect(first.1 == second.1)
        #expect(second.1 == (bytes.count - 3)..<bytes.count)
        #expect(memo.count == 1)
    }

    @Test("A record rewritten under the same id (a changed field, same length) is decoded anew")
    func rewritten() throws {
        let memo = DecodedRecords()
        var original = StoredResponseCodingTests.sample(location: .file("000000000000002a.body"))
        _ = try #require(decode(memo, id: 7, record(original)))
        original.headerFields["Cache-Control"] = "max-age=61"  // same length, one byte differs
        let changed = try #require(decode(memo, id: 7, record(original)))
        #expect(changed.0.headerFields["Cache-Control"] == "max-age=61")
    }

    @Test("A different last access, or a different inline body length, is not taken from memory")
    func lastAccessAndLength() throws {
        let memo = DecodedRecords()
        let sample = StoredResponseCodingTests.sample(location: .inline)
        _ = try #require(decode(memo, id: 1, record(sample), lastAccess: Date(timeIntervalSince1970: 10)))
        let later = try #require(decode(memo, id: 1, record(sample), lastAccess: Date(timeIntervalSince1970: 20)))
        #expect(later.0.lastAccess == Date(timeIntervalSince1970: 20))
        // One byte more after the metadata: the record no longer decodes (the body's length is in it).
        let longer = record(sample, body: [1, 2, 3, 4])
        #expect(decode(memo, id: 1, longer, lastAccess: Date(timeIntervalSince1970: 20)) == nil)
    }

    @Test("A small inline body is kept and shared; a large one and a file body are not")
    func keptBody() throws {
        let memo = DecodedRecords()
        let small = record(StoredResponseCodingTests.sample(location: .inline), body: [1, 2, 3])
        let first = try #require(small.withUnsafeBytes { memo.decode(id: 1, record: $0, lastAccess: nil) })
        #expect(first.body.map { Array($0.readableBytesView) } == [1, 2, 3])
        let second = try #require(small.withUnsafeBytes { memo.decode(id: 1, record: $0, lastAccess: nil) })
        #expect(second.body == first.body)
        // The record's memory is not what the kept body points to: changing it changes nothing.
        var copy = small
        let kept = try #require(copy.withUnsafeMutableBytes { raw -> ByteBuffer? in
            let result = memo.decode(id: 1, record: UnsafeRawBufferPointer(raw), lastAccess: nil)
            raw[raw.count - 1] = 9
            return result?.body
        })
        #expect(Array(kept.readableBytesView) == [1, 2, 3])

        var large = StoredResponseCodingTests.sample(location: .inline)
        let bigBody = [UInt8](repeating: 7, count: DecodedRecords.keptBodySize + 1)
        large.bodyLength = Int64(bigBody.count)
        large.bodyDigest = SHA256.hash(bigBody)
        let big = try #require(record(large, body: bigBody).withUnsafeBytes { memo.decode(id: 2, record: $0, lastAccess: nil) })
        #expect(big.body == nil)
        #expect(big.inlineBody?.count == bigBody.count)

        let file = record(StoredResponseCodingTests.sample(location: .file("000000000000002a.body")))
        #expect(try #require(file.withUnsafeBytes { memo.decode(id: 3, record: $0, lastAccess: nil) }).body == nil)
    }

    @Test("Bounded: past its capacity the memo starts empty again")
    func bounded() throws {
        let memo = DecodedRecords()
        let bytes = record(StoredResponseCodingTests.sample(location: .inline))
        for id in 0..<UInt64(DecodedRecords.capacity) { _ = decode(memo, id: id, bytes) }
        #expect(memo.count == DecodedRecords.capacity)
        _ = decode(memo, id: UInt64(DecodedRecords.capacity), bytes)
        #expect(memo.count == 1)
    }
}
