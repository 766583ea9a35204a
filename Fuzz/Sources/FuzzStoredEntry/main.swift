import FuzzSupport
import TollgateHTTP

@testable import TollgateCache

// The cache's LMDB record decoder (StoredResponse.decode(record:), and the DecodedRecords memo in
// front of it): what the store hands back, including after a crash or a disk error. The first
// byte picks the mode: even, the rest is a record as read from disk; odd, the rest describes a
// stored response, which is encoded the way the cache writes it.
//
// Invariants:
// - arbitrary bytes never crash the decoder nor make it allocate by a count it has not seen;
// - written by the cache, a response decodes to itself, its inline body is the bytes written,
//   and it re-encodes to the same bytes;
// - any record the decoder accepts re-encodes to a record that decodes to the same response and
//   re-encodes to itself (a fixed point: what is read back is what a rewrite stores);
// - the memo gives what a fresh decoding gives, and never a response decoded from other bytes.
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A response built from the reader, with every field the record carries.
func makeResponse(_ reader: inout FuzzReader) -> (StoredResponse, body: [UInt8]?) {
    let url = HTTPURL(
        scheme: reader.byte() & 1 == 0 ? "http" : "https",
        host: "h\(reader.byte()).example",
        pathAndQuery: "/" + reader.string()
    )
    var fields = HeaderFields()
    for _ in 0..<Int(reader.byte() % 8) { fields.add(name: reader.string(), value: reader.string()) }
    var varying: [VaryingField] = []
    for _ in 0..<Int(reader.byte() % 4) {
        let name = reader.string()
        varying.append(VaryingField(name: name, value: reader.byte() & 1 == 0 ? nil : reader.string()))
    }
    let inline = reader.byte() & 1 == 0
    let body = inline ? reader.bytes(Int(reader.byte())) : nil
    func date() -> Date { Date(timeIntervalSince1970: Double(reader.integer(width: 4))) }
    func digest() -> [UInt8] {
        let bytes = reader.bytes(32)
        return bytes + [UInt8](repeating: 0, count: 32 - bytes.count)
    }
    let response = StoredResponse(
        key: CacheKey(url: url),
        url: url.absoluteString,
        status: Int(reader.integer(width: 2)),
        reason: reader.string(),
        headerFields: fields,
        requestTime: date(),
        responseTime: date(),
        varyingRequestFields: varying,
        bodyLength: body.map { Int64($0.count) } ?? Int64(reader.integer(width: 7)),
        bodyDigest: digest(),
        bodyLocation: inline ? .inline : .file(reader.string()),
        storedAt: date(),
        lastAccess: date()
    )
    return (response, body)
}

/// The record of a decoded response, its inline body taken from `record`.
func reencode(_ decoded: (response: StoredResponse, inlineBody: Range<Int>?), from record: [UInt8]) -> [UInt8] {
    guard let range = decoded.inlineBody else { return decoded.response.encodedRecord() }
    return record[range].withUnsafeBytes { decoded.response.encodedRecord(inlineBody: $0) }
}

func decode(_ record: [UInt8]) -> (response: StoredResponse, inlineBody: Range<Int>?)? {
    record.withUnsafeBytes { StoredResponse.decode(record: $0) }
}

let memo = DecodedRecords()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzStoredEntry(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard count > 0 else { return 0 }
    let input = FuzzInput(start, count)
    if input.bytes[0] & 1 == 1 {
        var reader = FuzzReader(input.bytes.dropFirst())
        let (response, body) = makeResponse(&reader)
        guard response.bodyDigest.count == 32 else { return 0 }
        let record =
            body.map { body in body.withUnsafeBytes { response.encodedRecord(inlineBody: $0) } }
            ?? response.encodedRecord()
        guard let decoded = decode(record) else {
            fuzzCheck(false, "a record the cache wrote does not decode: \(response)")
            return 0
        }
        fuzzCheck(decoded.response == response, "decoded \(decoded.response), wrote \(response)")
        fuzzCheck(decoded.inlineBody.map { Array(record[$0]) } == body, "the inline body changed")
        fuzzCheck(reencode(decoded, from: record) == record, "a decoded record re-encodes to other bytes")
        return 0
    }

    let record = Array(input.bytes.dropFirst())
    guard let decoded = decode(record) else {
        fuzzCheck(
            record.withUnsafeBytes { memo.decode(id: 1, record: $0, lastAccess: nil) } == nil,
            "the memo decoded what the decoder refuses"
        )
        return 0
    }
    let first = reencode(decoded, from: record)
    guard let again = decode(first) else {
        fuzzCheck(false, "the re-encoding of an accepted record is refused")
        return 0
    }
    fuzzCheck(
        again.response == decoded.response,
        "re-encoding changed the response: \(decoded.response) → \(again.response)"
    )
    fuzzCheck(reencode(again, from: first) == first, "re-encoding is not a fixed point")
    let remembered = record.withUnsafeBytes { memo.decode(id: 1, record: $0, lastAccess: nil) }
    fuzzCheck(remembered?.response == decoded.response, "the memo answered \(String(describing: remembered?.response))")
    return 0
}

/// The executable's entry point: libFuzzer's driver, calling ``fuzzStoredEntry(_:_:)`` for each input.
@main
enum Main {
    static func main() { runLibFuzzer(fuzzStoredEntry) }
}
