import Foundation
import Testing
import TollgateCache
import TollgateHTTP

@Suite("Range, Content-Range and how a cache answers ranges", .timeLimit(.minutes(1)))
struct ByteRangeTests {
    @Test("Range values parse: closed, open-ended, suffix, several; invalid ones are nil")
    func parsing() {
        #expect(ByteRangeRequest(fieldValue: "bytes=0-99")?.ranges == [.from(0, through: 99)])
        #expect(ByteRangeRequest(fieldValue: "bytes=100-")?.ranges == [.from(100, through: nil)])
        #expect(ByteRangeRequest(fieldValue: "bytes=-5")?.ranges == [.suffix(5)])
        #expect(ByteRangeRequest(fieldValue: "BYTES=0-1, 5-6")?.ranges == [.from(0, through: 1), .from(5, through: 6)])
        #expect(ByteRangeRequest(fieldValue: "bytes=5-1") == nil)
        #expect(ByteRangeRequest(fieldValue: "items=0-1") == nil)
        #expect(ByteRangeRequest(fieldValue: "bytes=") == nil)
        #expect(ByteRangeRequest(fieldValue: "bytes=a-b") == nil)
        #expect(ByteRangeRequest(fieldValue: "bytes=-") == nil)
        #expect(ByteRangeRequest(fieldValue: "bytes=+1-2") == nil)
        #expect(ByteRangeRequest(fieldValue: "bytes=99999999999999999999-") == nil)
    }

    @Test("Ranges resolve against a length; past the end is unsatisfiable, a last past the end is cut")
    func resolving() {
        #expect(ByteRangeSpec.from(0, through: 9).resolve(length: 100) == 0..<10)
        #expect(ByteRangeSpec.from(90, through: 200).resolve(length: 100) == 90..<100)
        #expect(ByteRangeSpec.from(40, through: nil).resolve(length: 100) == 40..<100)
        #expect(ByteRangeSpec.from(100, through: nil).resolve(length: 100) == nil)
        #expect(ByteRangeSpec.suffix(10).resolve(length: 100) == 90..<100)
        #expect(ByteRangeSpec.suffix(500).resolve(length: 100) == 0..<100)
        #expect(ByteRangeSpec.suffix(0).resolve(length: 100) == nil)
    }

    @Test("Content-Range parses and prints")
    func contentRange() {
        let value = ContentRange(fieldValue: "bytes 10-19/100")
        #expect(value?.range == 10..<20)
        #expect(value?.completeLength == 100)
        #expect(value?.description == "bytes 10-19/100")
        #expect(ContentRange(fieldValue: "bytes */100")?.range == nil)
        #expect(ContentRange(fieldValue: "bytes */100")?.completeLength == 100)
        #expect(ContentRange(fieldValue: "bytes 0-9/*")?.completeLength == nil)
        #expect(ContentRange(fieldValue: "bytes 0-100/100") == nil)
        #expect(ContentRange(fieldValue: "bytes 9-0/100") == nil)
        #expect(ContentRange(fieldValue: "bytes */*") == nil)
        #expect(ContentRange(range: 0..<5, completeLength: 5).description == "bytes 0-4/5")
    }

    @Test("The cache answers one range, a suffix, 416 past the end, and several by going forward")
    func answers() {
        let rules = CacheRules.shared
        let storedFields = fields(["ETag: \"v1\"", "Last-Modified: @-3600"])
        func answer(_ lines: [String], status: Int = 200) -> RangeAnswer {
            rules.rangeAnswer(request: request(lines), status: status, storedFields: storedFields, length: 1000)
        }
        #expect(answer([]) == .whole)
        #expect(answer(["Range: bytes=0-99"]) == .part(0..<100))
        #expect(answer(["Range: bytes=900-"]) == .part(900..<1000))
        #expect(answer(["Range: bytes=-10"]) == .part(990..<1000))
        #expect(answer(["Range: bytes=1000-"]) == .unsatisfiable)
        #expect(answer(["Range: bytes=0-1,5-6"]) == .forward)
        #expect(answer(["Range: bytes=zz"]) == .whole)
        #expect(answer(["Range: bytes=0-99"], status: 206) == .whole)
        #expect(rules.rangeAnswer(request: request(["Range: bytes=0-9"], method: .head), status: 200, storedFields: storedFields, length: 1000) == .whole)
    }

    @Test("If-Range: a strong match serves the range; another tag, a weak tag or another date serves the whole")
    func ifRange() {
        let rules = CacheRules.shared
        let storedFields = fields(["ETag: \"v1\"", "Last-Modified: @-3600"])
        func answer(_ ifRange: String, _ stored: HeaderFields = storedFields) -> RangeAnswer {
            rules.rangeAnswer(request: request(["Range: bytes=0-9", "If-Range: \(ifRange)"]), status: 200, storedFields: stored, length: 100)
        }
        #expect(answer("\"v1\"") == .part(0..<10))
        #expect(answer("\"v2\"") == .whole)
        #expect(answer("W/\"v1\"") == .whole)
        #expect(answer(httpDate(-3600)) == .part(0..<10))
        #expect(answer(httpDate(-3599)) == .whole)
        #expect(answer("\"v1\"", fields(["ETag: W/\"v1\""])) == .whole)
    }

    @Test("The combining validator is a strong ETag, else Last-Modified; a weak ETag has none")
    func combiningValidator() {
        #expect(CacheRules.combiningValidator(of: fields(["ETag: \"a\""])) == "etag \"a\"")
        #expect(CacheRules.combiningValidator(of: fields(["ETag: W/\"a\"", "Last-Modified: @0"])) == nil)
        #expect(CacheRules.combiningValidator(of: fields(["Last-Modified: @0"])) == "last-modified " + httpDate(0))
        #expect(CacheRules.combiningValidator(of: fields([])) == nil)
        #expect(CacheRules.ifRangeValue(for: fields(["ETag: \"a\"", "Last-Modified: @0"])) == "\"a\"")
    }
}
