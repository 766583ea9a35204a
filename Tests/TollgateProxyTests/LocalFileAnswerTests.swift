import Foundation
import Testing
import TollgateHTTP

@testable import TollgateProxy

/// What a `map-local` file answers, decided from the request's fields and the file's length and
/// modification time alone: validators, preconditions, ranges.
@Suite("LocalFileAnswer: a mapped file's validators, conditional requests and ranges")
struct LocalFileAnswerTests {
    /// 2026-11-30 03:20:00.75 UTC: the fraction is not part of the validators.
    private static let modified = Date(timeIntervalSince1970: 1_795_922_400.75)
    private static let etag = "\"" + String(1_795_922_400, radix: 16) + "-3e8\""
    private static let lastModified = HTTPDate.format(Date(timeIntervalSince1970: 1_795_922_400))

    private static func answer(_ method: HTTPMethod = .get, _ fields: [(String, String)] = [], length: Int64 = 1000) -> LocalFileAnswer {
        var headerFields = HeaderFields()
        for (name, value) in fields { headerFields.add(name: name, value: value) }
        let request = HTTPRequestHead(method: method, url: HTTPURL(string: "http://a.test/f.json")!, headerFields: headerFields)
        return LocalFileAnswer(request: request, length: length, modified: modified, contentType: "application/json")
    }

    @Test("A plain GET: 200, the whole file, nginx's ETag (mtime-length in hex), Last-Modified, no-cache, Accept-Ranges")
    func whole() {
        let answer = Self.answer()
        #expect(answer.status == 200 && answer.bytes == 0..<1000)
        #expect(answer.fields[.eTag] == Self.etag)
        #expect(answer.fields[.lastModified] == Self.lastModified)
        #expect(answer.fields[.cacheControl] == "no-cache")
        #expect(answer.fields[.acceptRanges] == "bytes")
        #expect(answer.fields[.contentLength] == "1000" && answer.fields[.contentType] == "application/json")
        let empty = Self.answer(length: 0)
        #expect(empty.status == 200 && empty.bytes == 0..<0 && empty.fields[.contentLength] == "0")
    }

    @Test("If-None-Match (weak comparison, * and lists) and If-Modified-Since answer 304 with the validators and no body; a changed file 200")
    func notModified() {
        for fields in [
            [("If-None-Match", Self.etag)], [("If-None-Match", "W/" + Self.etag)], [("If-None-Match", "*")],
            [("If-None-Match", "\"x\", " + Self.etag)], [("If-Modified-Since", Self.lastModified)],
        ] {
            let answer = Self.answer(.get, fields)
            #expect(answer.status == 304 && answer.bytes == nil, "\(fields)")
            #expect(answer.fields[.eTag] == Self.etag && answer.fields[.lastModified] == Self.lastModified)
            #expect(answer.fields[.contentLength] == nil && answer.fields[.contentType] == nil)
        }
        #expect(Self.answer(.head, [("If-None-Match", Self.etag)]).status == 304)
        // The file changed since: another length, a later time, an older date asked about.
        #expect(Self.answer(.get, [("If-None-Match", Self.etag)], length: 1001).status == 200)
        #expect(Self.answer(.get, [("If-Modified-Since", HTTPDate.format(Self.modified.addingTimeInterval(-1)))]).status == 200)
        // If-None-Match decides alone when present (§13.2.2).
        #expect(Self.answer(.get, [("If-None-Match", "\"other\""), ("If-Modified-Since", Self.lastModified)]).status == 200)
    }

    @Test("If-Match (strong comparison) and If-Unmodified-Since that fail answer 412; ones that hold, or do not parse, are passed")
    func preconditionFailed() {
        #expect(Self.answer(.get, [("If-Match", "\"other\"")]).status == 412)
        #expect(Self.answer(.get, [("If-Match", "W/" + Self.etag)]).status == 412)
        #expect(Self.answer(.get, [("If-Unmodified-Since", HTTPDate.format(Self.modified.addingTimeInterval(-60)))]).status == 412)
        #expect(Self.answer(.get, [("If-Match", Self.etag)]).status == 200)
        #expect(Self.answer(.get, [("If-Match", "*")]).status == 200)
        #expect(Self.answer(.get, [("If-Unmodified-Since", Self.lastModified)]).status == 200)
        #expect(Self.answer(.get, [("If-Unmodified-Since", "yesterday")]).status == 200)
        let failed = Self.answer(.get, [("If-Match", "\"other\"")])
        #expect(failed.bytes == nil && failed.fields[.contentLength] == "0")
    }

    @Test("A Range answers 206 with Content-Range (first-last, open-ended, suffix); past the end 416 bytes */length; several ranges, or an If-Range that does not hold, the whole file")
    func ranges() {
        let part = Self.answer(.get, [("Range", "bytes=100-199")])
        #expect(part.status == 206 && part.bytes == 100..<200)
        #expect(part.fields[.contentLength] == "100" && part.fields["Content-Range"] == "bytes 100-199/1000")
        #expect(Self.answer(.get, [("Range", "bytes=900-")]).bytes == 900..<1000)
        #expect(Self.answer(.get, [("Range", "bytes=-10")]).fields["Content-Range"] == "bytes 990-999/1000")
        #expect(Self.answer(.get, [("Range", "bytes=990-5000")]).bytes == 990..<1000)
        let past = Self.answer(.get, [("Range", "bytes=1000-")])
        #expect(past.status == 416 && past.bytes == nil && past.fields["Content-Range"] == "bytes */1000")
        #expect(Self.answer(.get, [("Range", "bytes=0-1,5-6")]).status == 200)
        #expect(Self.answer(.get, [("Range", "bytes=0-9"), ("If-Range", Self.etag)]).status == 206)
        #expect(Self.answer(.get, [("Range", "bytes=0-9"), ("If-Range", Self.lastModified)]).status == 206)
        let changed = Self.answer(.get, [("Range", "bytes=0-9"), ("If-Range", "\"old\"")])
        #expect(changed.status == 200 && changed.bytes == 0..<1000)
        // A HEAD's Range is ignored (§14.2: GET only); a conditional answer comes before the range.
        #expect(Self.answer(.head, [("Range", "bytes=0-9")]).status == 200)
        #expect(Self.answer(.get, [("Range", "bytes=0-9"), ("If-None-Match", Self.etag)]).status == 304)
    }
}
