import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing
import TollgateHTTP
import TollgateStore

@testable import TollgateCache

@Suite("Partial content in the store: pieces kept, combined, replaced", .timeLimit(.minutes(1)))
struct PartialContentStoreTests {
    let url = "https://example.com/artifact.bin"
    var key: CacheKey { CacheKey(url: HTTPURL(string: url)!) }

    func piece(_ store: CacheStore, _ body: [UInt8], _ range: Range<Int>, total: Int, etag: String = "\"v1\"") throws -> PartialPieceWriter.Outcome {
        let head = response(
            ["Cache-Control: max-age=600", "ETag: \(etag)", "Content-Range: bytes \(range.lowerBound)-\(range.upperBound - 1)/\(total)",
             "Content-Length: \(range.count)", "Content-Type: application/octet-stream"],
            status: 206
        )
        let writer = try #require(try store.beginPiece(key: key, request: request(url: url), response: head, requestTime: now, responseTime: now))
        try writer.append(buffer(Array(body[range])))
        return try writer.finish()
    }

    func contents(_ entry: CacheEntry) throws -> [UInt8] {
        var body = try entry.body.readAll()
        return body.readBytes(length: body.readableBytes) ?? []
    }

    @Test("Two 206 pieces with the same validator combine into a complete 200 entry, byte-exact")
    func combine() throws {
        try withStore(inlineBodyLimit: 1_024) { store, directory in
            let body = pattern(10_000, seed: 3)
            #expect(try piece(store, body, 0..<4_000, total: 10_000) == .kept(presentBytes: 4_000))
            let partial = try #require(store.partialContent(for: key))
            #expect(partial.covers(100..<4_000))
            #expect(!partial.covers(3_000..<5_000))
            #expect(partial.response.status == 200)
            #expect(partial.response.headerFields["Content-Length"] == "10000")
            #expect(partial.response.headerFields["Content-Range"] == nil)
            #expect(try store.lookup(key, requestHeaders: HeaderFields()) == nil)  // nothing whole yet

            guard case .combined(let id) = try piece(store, body, 3_500..<10_000, total: 10_000) else {
                Issue.record("the pieces were not combined")
                return
            }
            let entry = try #require(try store.lookup(key, requestHeaders: HeaderFields()))
            #expect(entry.id == id)
            #expect(entry.response.status == 200)
            #expect(entry.response.headerFields["Content-Length"] == "10000")
            #expect(entry.response.headerFields["ETag"] == "\"v1\"")
            #expect(try contents(entry) == body)
            #expect(entry.response.bodySHA256 == SHA256.hex(SHA256.hash(body)))
            #expect(store.partialContent(for: key) == nil)
            #expect(!bodyFiles(directory).contains { $0.hasPrefix("partial-") })
        }
    }

    @Test("Pieces together stay within an eighth of max-size: past it the oldest URLs' pieces go, files and all")
    func piecesStayWithinTheirBudget() throws {
        let clock = TestClock()
        // 1 MiB: a budget of 128 KiB for pieces, a per-response limit of 52 428 bytes.
        try withStore(maxSize: 1 << 20, clock: clock) { store, directory in
            #expect(store.partialBudget == 131_072)
            let body = pattern(50_000, seed: 7)
            let urls = (0..<4).map { "https://example.com/part-\($0).bin" }
            func keep(_ url: String) throws {
                let head = response(
                    ["Cache-Control: max-age=600", "ETag: \"v1\"", "Content-Range: bytes 0-39999/50000", "Content-Length: 40000"],
                    status: 206
                )
                let key = CacheKey(url: HTTPURL(string: url)!)
                let writer = try #require(try store.beginPiece(key: key, request: request(url: url), response: head, requestTime: now, responseTime: now))
                try writer.append(buffer(Array(body[0..<40_000])))
                #expect(try writer.finish() == .kept(presentBytes: 40_000))
                clock.advance(1)
            }
            for url in urls.prefix(3) { try keep(url) }  // 120 000 bytes: within the budget
            #expect(urls.prefix(3).allSatisfy { store.partialContent(for: CacheKey(url: HTTPURL(string: $0)!)) != nil })
            try keep(urls[3])  // 160 000: the oldest goes
            #expect(store.partialContent(for: CacheKey(url: HTTPURL(string: urls[0])!)) == nil)
            #expect(urls.dropFirst().allSatisfy { store.partialContent(for: CacheKey(url: HTTPURL(string: $0)!)) != nil })
            #expect(bodyFiles(directory).filter { $0.hasPrefix("partial-") }.count == 3)
        }
    }

    @Test("A piece with another validator replaces what was kept; a piece of the old one in flight is superseded")
    func replaced() throws {
        try withStore { store, directory in
            let body = pattern(1_000)
            _ = try piece(store, body, 0..<500, total: 1_000)
            let oldHead = response(["ETag: \"v1\"", "Content-Range: bytes 500-999/1000", "Content-Length: 500"], status: 206)
            let inFlight = try #require(try store.beginPiece(key: key, request: request(url: url), response: oldHead, requestTime: now, responseTime: now))
            try inFlight.append(buffer(Array(body[500..<1_000])))
            #expect(try piece(store, body, 0..<100, total: 1_000, etag: "\"v2\"") == .kept(presentBytes: 100))
            #expect(try inFlight.finish() == .superseded)
            let partial = try #require(store.partialContent(for: key))
            #expect(partial.validator == "etag \"v2\"")
            #expect(partial.covered == [0..<100])
            #expect(bodyFiles(directory).filter { $0.hasPrefix("partial-") }.count == 1)
        }
    }

    @Test("Responses that cannot be kept: a 200 with a weak ETag, Vary, unknown length, another status")
    func refused() throws {
        try withStore { store, _ throws in
            func refused(_ lines: [String], status: Int = 206) throws -> Bool {
                try store.beginPiece(key: key, request: request(url: url), response: response(lines, status: status), requestTime: now, responseTime: now) == nil
            }
            #expect(try refused(["ETag: W/\"w\"", "Content-Length: 10"], status: 200))
            #expect(try refused(["ETag: \"s\"", "Vary: Accept", "Content-Range: bytes 0-9/100"]))
            #expect(try refused(["ETag: \"s\"", "Content-Range: bytes 0-9/*"]))
            #expect(try refused(["ETag: \"s\"", "Content-Range: bytes 0-9/100", "Content-Length: 5"]))
            #expect(try refused(["ETag: \"s\""], status: 200))  // no Content-Length
            #expect(try refused(["ETag: \"s\"", "Content-Length: 10"], status: 404))
        }
    }

    @Test("A piece cannot write past the end of the whole body")
    func overlong() throws {
        try withStore { store, _ in
            let head = response(["ETag: \"s\"", "Content-Range: bytes 90-99/100"], status: 206)
            let writer = try #require(try store.beginPiece(key: key, request: request(url: url), response: head, requestTime: now, responseTime: now))
            #expect(throws: CacheStoreError.truncatedBody) { try writer.append(buffer(pattern(11))) }
        }
    }

    @Test("A 200 cut short is salvaged as the first piece, and a 206 for the rest completes it")
    func salvage() throws {
        try withStore(inlineBodyLimit: 1_024) { store, _ in
            let body = pattern(50_000, seed: 7)
            let head = response(["Cache-Control: max-age=600", "ETag: \"v1\"", "Content-Length: 50000"])
            let writer = try store.beginStore(key: key, request: request(url: url), response: head, requestTime: now, responseTime: now)
            try writer.append(buffer(Array(body[0..<30_000])))
            #expect(writer.salvageAsPiece() == .kept(presentBytes: 30_000))
            #expect(throws: CacheStoreError.writerFinished) { try writer.commit() }
            #expect(store.partialContent(for: key)?.covered == [0..<30_000])
            guard case .combined = try piece(store, body, 30_000..<50_000, total: 50_000) else {
                Issue.record("not combined")
                return
            }
            let entry = try #require(try store.lookup(key, requestHeaders: HeaderFields()))
            #expect(try contents(entry) == body)
        }
    }

    /// The race a resumed download ran into: its 206 was recorded before the cut prefix's salvage
    /// (off the loop), then the salvage made the response whole before the download's own prefix
    /// was offered as the leading piece — which started pieces of a response already whole and
    /// reported it kept, not stored ("1 not stored" from a warm that had stored it).
    @Test("A piece of a response another piece made whole meanwhile reports the whole entry and leaves no pieces")
    func madeWholeMeanwhile() throws {
        try withStore(inlineBodyLimit: 1_024) { store, directory in
            let body = pattern(50_000, seed: 11)
            let head = response(["Cache-Control: max-age=600", "ETag: \"v1\"", "Content-Length: 50000"])
            let salvaged = try store.beginStore(key: key, request: request(url: url), response: head, requestTime: now, responseTime: now)
            try salvaged.append(buffer(Array(body[0..<30_000])))
            #expect(try piece(store, body, 30_000..<50_000, total: 50_000) == .kept(presentBytes: 20_000))
            guard case .combined(let id) = salvaged.salvageAsPiece() else {
                Issue.record("the salvaged prefix did not complete the response")
                return
            }
            let prefix = URL(fileURLWithPath: NSTemporaryDirectory() + "tollgate-download-\(UUID().uuidString).part")
            defer { try? FileManager.default.removeItem(at: prefix) }
            try Data(body[0..<30_000]).write(to: prefix)
            let resumed = response(
                ["Cache-Control: max-age=600", "ETag: \"v1\"", "Content-Range: bytes 30000-49999/50000", "Content-Length: 20000"],
                status: 206
            )
            #expect(
                try store.keepLeadingPiece(
                    key: key, request: request(url: url), response: resumed, replacementFields: nil, fromFile: prefix.path,
                    length: 30_000, requestTime: now, responseTime: now
                ) == .combined(id)
            )
            // A piece begun before the response was whole and finished after it says so too.
            #expect(try piece(store, body, 0..<10_000, total: 50_000) == .combined(id))
            #expect(store.partialContent(for: key) == nil)
            #expect(!bodyFiles(directory).contains { $0.hasPrefix("partial-") })
            #expect(try contents(try #require(try store.lookup(key, requestHeaders: HeaderFields()))) == body)
            // Of another validator, a piece is kept as before.
            #expect(try piece(store, body, 0..<10_000, total: 50_000, etag: "\"v2\"") == .kept(presentBytes: 10_000))
        }
    }

    @Test("A 200 without a strong validator is not salvaged; a purge and a whole response drop the pieces")
    func notSalvagedAndDropped() throws {
        try withStore { store, directory in
            let weak = response(["ETag: W/\"w\"", "Content-Length: 100"])
            let writer = try store.beginStore(key: key, request: request(url: url), response: weak, requestTime: now, responseTime: now)
            try writer.append(buffer(pattern(10)))
            #expect(writer.salvageAsPiece() == nil)
            #expect(store.partialContent(for: key) == nil)

            _ = try piece(store, pattern(100), 0..<10, total: 100)
            #expect(try store.remove(url: url) == 0)
            #expect(store.partialContent(for: key) == nil)
            _ = try piece(store, pattern(100), 0..<10, total: 100)
            try put(store, url, body: pattern(100))
            #expect(store.partialContent(for: key) == nil)
            #expect(!bodyFiles(directory).contains { $0.hasPrefix("partial-") })
        }
    }

    @Test("Starting a piece does not wait for a commit: the record is written by the writer thread, and finishing waits for it")
    func startsWithoutCommitting() throws {
        try withStore { store, directory in
            // The writer thread holds LMDB's write lock until released: a piece that committed
            // its record as it starts (as an event loop once did) would wait for it.
            let holding = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            let held = NIOLockedValueBox(true)
            store.writer.submit(
                { _ in
                    holding.signal()
                    _ = release.wait(timeout: .now() + 20)
                    held.withLockedValue { $0 = false }
                },
                completion: { _ in }
            )
            holding.wait()
            let head = response(["ETag: \"v1\"", "Content-Range: bytes 0-49/100", "Content-Length: 50"], status: 206)
            let writer = try #require(try store.beginPiece(key: key, request: request(url: url), response: head, requestTime: now, responseTime: now))
            try writer.append(buffer(Array(pattern(100)[0..<50])))
            #expect(held.withLockedValue { $0 }, "beginPiece waited for the writer")
            #expect(store.partialContent(for: key) == nil)  // not written yet
            release.signal()
            #expect(try writer.finish() == .kept(presentBytes: 50))
            #expect(store.partialContent(for: key)?.covered == [0..<50])
            #expect(bodyFiles(directory).filter { $0.hasPrefix("partial-") }.count == 1)
        }
    }

    @Test("Two new pieces of one validator begun at once each take a file; the one filed second copies its bytes into the first's, and they combine")
    func twoNewPiecesAtOnce() throws {
        // As a cut download's salvaged prefix and the 206 of its resume can: both read an empty
        // record before either is filed.
        try withStore { store, directory in
            let body = pattern(100)
            func begin(_ range: Range<Int>) throws -> PartialPieceWriter {
                let head = response(
                    ["ETag: \"v1\"", "Content-Range: bytes \(range.lowerBound)-\(range.upperBound - 1)/100", "Content-Length: \(range.count)"],
                    status: 206
                )
                let writer = try #require(try store.beginPiece(key: key, request: request(url: url), response: head, requestTime: now, responseTime: now))
                try writer.append(buffer(Array(body[range])))
                return writer
            }
            let holding = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            store.writer.submit({ _ in holding.signal(); _ = release.wait(timeout: .now() + 20) }, completion: { _ in })
            holding.wait()
            let first = try begin(0..<40)
            let second = try begin(40..<70)
            let third = try begin(70..<100)
            #expect(bodyFiles(directory).filter { $0.hasPrefix("partial-") }.count == 3)
            release.signal()
            #expect(try first.finish() == .kept(presentBytes: 40))
            #expect(try second.finish() == .kept(presentBytes: 70))
            #expect(store.partialContent(for: key)?.covered == [0..<70])
            #expect(bodyFiles(directory).filter { $0.hasPrefix("partial-") }.count == 2)  // the second's copied and gone
            guard case .combined = try third.finish() else {
                Issue.record("the pieces did not combine")
                return
            }
            let entry = try #require(try store.lookup(key, requestHeaders: HeaderFields()))
            #expect(try contents(entry) == body)
            #expect(!bodyFiles(directory).contains { $0.hasPrefix("partial-") })
        }
    }

    @Test("Pieces survive reopening; a partial file without a record is swept at open")
    func reopen() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        do {
            let store = try CacheStore(options: options(directory))
            _ = try piece(store, pattern(100), 0..<40, total: 100)
            store.close()
        }
        _ = FileManager.default.createFile(atPath: directory.path + "/bodies/partial-ffff.part", contents: Data([1, 2, 3]))
        let store = try CacheStore(options: options(directory))
        defer { store.close() }
        #expect(store.partialContent(for: key)?.covered == [0..<40])
        #expect(store.sweptOrphans == 1)
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/bodies/partial-ffff.part"))
    }

    @Test("A 206 without a validator is kept alone for reuse, never combined: the next such piece replaces it")
    func withoutValidator() throws {
        try withStore { store, _ throws in
            func keep(_ range: Range<Int>) throws -> PartialPieceWriter.Outcome? {
                let head = response(["Cache-Control: max-age=60", "Content-Range: bytes \(range.lowerBound)-\(range.upperBound - 1)/100"], status: 206)
                let writer = try store.beginPiece(key: key, request: request(url: url), response: head, requestTime: now, responseTime: now)
                try writer?.append(buffer(Array(pattern(100)[range])))
                return try writer?.finish()
            }
            #expect(try keep(0..<50) == .kept(presentBytes: 50))
            #expect(store.partialContent(for: key)?.covers(10..<20) == true)
            #expect(try keep(50..<100) == .kept(presentBytes: 50))
            #expect(store.partialContent(for: key)?.covered == [50..<100])
            #expect(try store.lookup(key, requestHeaders: HeaderFields()) == nil)
        }
    }
}
