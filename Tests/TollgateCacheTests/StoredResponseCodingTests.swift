import Foundation
import Testing
import TollgateCache
import TollgateHTTP

@Suite("StoredResponse binary records", .timeLimit(.minutes(1)))
struct StoredResponseCodingTests {
    static func sample(location: BodyLocation) -> StoredResponse {
        StoredResponse(
            key: CacheKey(url: HTTPURL(string: "https://example.com/ü?q=1")!),
            url: "https://EXAMPLE.com/ü?q=1#f",
            status: 203,
            reason: "Non-Authoritative Information",
            headerFields: HeaderFields([
                ("Cache-Control", "max-age=60"), ("X-Dup", "1"), ("X-Dup", "2"), ("X-Empty", ""),
            ]),
            requestTime: Date(timeIntervalSince1970: 1_700_000_000.25),
            responseTime: Date(timeIntervalSince1970: 1_700_000_001.5),
            varyingRequestFields: [
                VaryingField(name: "Accept-Encoding", value: "gzip"), VaryingField(name: "cookie", value: nil),
            ],
            bodyLength: 3,
            bodyDigest: SHA256.hash([1, 2, 3]),
            bodyLocation: location,
            storedAt: Date(timeIntervalSince1970: 1_700_000_002),
            lastAccess: Date(timeIntervalSince1970: 1_700_000_003)
        )
    }

    @Test(
        "Metadata round-trips, inline and file bodies alike",
        arguments: [BodyLocation.inline, .file("000000000000002a.body")]
    )
    func roundTrip(_ location: BodyLocation) throws {
        let original = Self.sample(location: location)
        let decoded = try #require(
            StoredResponse.decode(record: original.encodedMetadata() + (location == .inline ? [1, 2, 3] : []))
        )
        #expect(decoded == original)
        #expect(decoded.bodySHA256 == SHA256.hex(SHA256.hash([1, 2, 3])))
        #expect(decoded.varyingRequestFields[0].name == "accept-encoding")
    }

    @Test("A record starts with version 1")
    func version() {
        #expect(Self.sample(location: .inline).encodedMetadata().first == 1)
    }

    @Test("Damaged records do not decode")
    func damaged() {
        let record = Self.sample(location: .inline).encodedMetadata() + [1, 2, 3]
        #expect(StoredResponse.decode(record: Array(record.prefix(40))) == nil)
        #expect(StoredResponse.decode(record: [2] + record.dropFirst()) == nil)  // unknown version
        #expect(StoredResponse.decode(record: record + [4]) == nil)  // inline body longer than recorded
        #expect(StoredResponse.decode(record: []) == nil)
    }
}
