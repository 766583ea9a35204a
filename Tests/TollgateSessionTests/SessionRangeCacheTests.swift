import Foundation
import NIOCore
import Testing
import TollgateCache
import TollgateHTTP
@testable import TollgateSession
import TollgateTesting

@Suite("Range requests and the cache: served from entries and pieces, pieces stored and combined", .timeLimit(.minutes(1)))
struct SessionRangeCacheTests {
    static let body = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 1) }

    /// Runs `body` with a range origin and a session on a fresh cache, all stopped afterwards.
    func withCachedSession(
        delegate: (any SessionDelegate)? = nil,
        _ body: (RangeOrigin, CacheFixture, Session) async throws -> Void
    ) async throws {
        let origin = try await RangeOrigin.start(body: Self.body)
        defer { origin.stop() }
        let cache = try CacheFixture()
        let session = cache.session(delegate: delegate)
        defer { session.finishTasksAndInvalidate() }
        try await body(origin, cache, session)
    }

    func get(_ session: Session, _ url: HTTPURL, _ fields: [(String, String)] = []) async throws -> (status: Int, head: HTTPResponseHead, body: [UInt8]) {
        var request = Request(url: url)
        for (name, value) in fields { request.headerFields.add(name: name, value: value) }
        var (buffer, head) = try await session.data(for: request)
        return (head.status, head, buffer.readBytes(length: buffer.readableBytes) ?? [])
    }

    /// A data task for the whole body cut after `bytes`: what arrived is kept as a piece (waited for).
    func cutDownload(_ origin: RangeOrigin, _ cache: CacheFixture, _ session: Session, after bytes: Int) async throws {
        origin.cutNext(after: bytes)
        await #expect(throws: SessionError.self) { _ = try await get(session, origin.url) }
        let key = CacheKey(url: origin.url)
        try await eventually { cache.cache.store.partialContent(for: key)?.covered == [0..<Int64(bytes)] }
    }

    @Test("A stored complete response answers ranges without the origin: one range, open-ended, suffix, 416, If-Range")
    func fromCompleteEntry() async throws {
        try await withCachedSession { origin, cache, session in
            _ = try await get(session, origin.url)
            try await eventually { (try? cache.cache.store.lookup(CacheKey(url: origin.url), requestHeaders: HeaderFields())) != nil }
            #expect(origin.requestCount == 1)

            let closed = try await get(session, origin.url, [("Range", "bytes=10-19")])
            #expect(closed.status == 206)
            #expect(closed.head.headerFields["Content-Range"] == "bytes 10-19/100000")
            #expect(closed.head.headerFields["Content-Length"] == "10")
            #expect(closed.body == Array(Self.body[10..<20]))

            let open = try await get(session, origin.url, [("Range", "bytes=99990-")])
            #expect(open.status == 206)
            #expect(open.body == Array(Self.body[99_990...]))

            let suffix = try await get(session, origin.url, [("Range", "bytes=-5")])
            #expect(suffix.head.headerFields["Content-Range"] == "bytes 99995-99999/100000")
            #expect(suffix.body == Array(Self.body[99_995...]))

            let past = try await get(session, origin.url, [("Range", "bytes=100000-")])
            #expect(past.status == 416)
            #expect(past.head.headerFields["Content-Range"] == "bytes */100000")
            #expect(past.body.isEmpty)

            let matching = try await get(session, origin.url, [("Range", "bytes=0-0"), ("If-Range", origin.etag)])
            #expect(matching.status == 206)
            let mismatch = try await get(session, origin.url, [("Range", "bytes=0-0"), ("If-Range", "\"other\"")])
            #expect(mismatch.status == 200)
            #expect(mismatch.body == Self.body)
            #expect(origin.requestCount == 1)
        }
    }

    @Test("A 206 from the origin is kept and serves the ranges it covers; pieces that make the whole are combined")
    func piecesStoredServedAndCombined() async throws {
        try await withCachedSession { origin, cache, session in
            let key = CacheKey(url: origin.url)

            let first = try await get(session, origin.url, [("Range", "bytes=0-39999")])
            #expect(first.status == 206)
            #expect(first.body == Array(Self.body[0..<40_000]))
            try await eventually { cache.cache.store.partialContent(for: key)?.covered == [0..<40_000] }

            let inside = try await get(session, origin.url, [("Range", "bytes=100-199")])
            #expect(inside.status == 206)
            #expect(inside.body == Array(Self.body[100..<200]))
            #expect(origin.requestCount == 1)

            let beyond = try await get(session, origin.url, [("Range", "bytes=30000-")])
            #expect(beyond.body == Array(Self.body[30_000...]))
            #expect(origin.requestCount == 2)
            try await eventually { (try? cache.cache.store.lookup(key, requestHeaders: HeaderFields())) != nil }
            #expect(cache.cache.store.partialContent(for: key) == nil)

            let whole = try await get(session, origin.url)
            #expect(whole.status == 200)
            #expect(whole.body == Self.body)
            #expect(origin.requestCount == 2)
        }
    }

    @Test("A data task cut short leaves its prefix; a Range for the rest completes the entry")
    func cutDataTaskThenRange() async throws {
        try await withCachedSession { origin, cache, session in
            try await cutDownload(origin, cache, session, after: 60_000)
            let key = CacheKey(url: origin.url)
            let rest = try await get(session, origin.url, [("Range", "bytes=60000-"), ("If-Range", origin.etag)])
            #expect(rest.status == 206)
            try await eventually { (try? cache.cache.store.lookup(key, requestHeaders: HeaderFields())) != nil }
            let whole = try await get(session, origin.url)
            #expect(whole.body == Self.body)
            #expect(origin.requestCount == 2)
        }
    }

    @Test("With range-offset-limit none a Range miss is fetched whole and cut; the whole response is stored")
    func fetchWhole() async throws {
        let origin = try await RangeOrigin.start(body: Self.body)
        defer { origin.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-cache-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cache = try ResponseCache(path: directory, maxSize: 64 << 20, rangeOffsetLimit: nil)
        defer { cache.store.close() }
        var configuration = SessionConfiguration.ephemeral
        configuration.responseCache = cache
        let session = Session(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }

        let part = try await get(session, origin.url, [("Range", "bytes=500-1499")])
        #expect(part.status == 206)
        #expect(part.head.headerFields["Content-Range"] == "bytes 500-1499/100000")
        #expect(part.body == Array(Self.body[500..<1_500]))
        #expect(origin.rangesAsked == [nil])
        try await eventually { (try? cache.store.lookup(CacheKey(url: origin.url), requestHeaders: HeaderFields())) != nil }
        let whole = try await get(session, origin.url)
        #expect(whole.body == Self.body)
        #expect(origin.requestCount == 1)
    }

    @Test("Several ranges go to the origin as they are")
    func severalRangesForwarded() async throws {
        try await withCachedSession { origin, cache, session in
            _ = try await get(session, origin.url)
            _ = try await get(session, origin.url, [("Range", "bytes=0-1,5-6")])
            #expect(origin.rangesAsked.last == "bytes=0-1,5-6")
            #expect(origin.requestCount == 2)
        }
    }

    @Test("A delegate that answers doNotStore keeps no piece: neither a 206 nor a cut 200")
    func refusedPiecesAreNotKept() async throws {
        final class Refuser: SessionDelegate, DataTaskDelegate, @unchecked Sendable {
            func dataTask(_ task: DataTask, willCacheResponse proposed: CachedResponse, completionHandler: @escaping @Sendable (CacheDecision) -> Void) {
                completionHandler(.doNotStore)
            }
        }
        try await withCachedSession(delegate: Refuser()) { origin, cache, session in
            _ = try await get(session, origin.url, [("Range", "bytes=0-999")])
            origin.cutNext(after: 5_000)
            await #expect(throws: SessionError.self) { _ = try await get(session, origin.url) }
            try await Task.sleep(for: .milliseconds(200))
            #expect(cache.cache.store.partialContent(for: CacheKey(url: origin.url)) == nil)
        }
    }

    @Test("A Range request arriving while another task fetches the whole response waits for it and is cut from the stored copy")
    func rangeWaitsForWholeFetch() async throws {
        // The whole response's body arrives in two halves 300 ms apart: the Range request starts in between.
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.sendHead(status: 200, headers: ["Cache-Control": "max-age=3600", "Content-Length": "10"])
            respond.write("01234")
            respond.after(.milliseconds(300)) { respond.write("56789") }
        }
        defer { origin.stop() }
        let cache = try CacheFixture()
        let session = cache.session()
        defer { session.finishTasksAndInvalidate() }
        let url = origin.url("/whole")
        async let whole = get(session, url)
        try await eventually { origin.requestCount == 1 }
        let range = try await get(session, url, [("Range", "bytes=6-8")])
        #expect(range.status == 206)
        #expect(range.body == Array("678".utf8))
        #expect(try await whole.body == Array("0123456789".utf8))
        #expect(origin.requestCount == 1)
    }

    @Test("A plain GET for what is held in pieces asks the origin for the missing bytes alone and is served the combined entry")
    func completesPieces() async throws {
        try await withCachedSession { origin, cache, session in
            try await cutDownload(origin, cache, session, after: 60_000)

            let whole = try await get(session, origin.url)
            #expect(whole.status == 200)
            #expect(whole.body == Self.body)
            #expect(whole.head.headerFields["Content-Length"] == "100000")
            #expect(whole.head.headerFields["Content-Range"] == nil)
            #expect(origin.rangesAsked == [nil, "bytes=60000-99999"])
            #expect(origin.origin.requests.last?.headerFields["If-Range"] == origin.etag)

            let hit = try await get(session, origin.url)
            #expect(hit.body == Self.body)
            #expect(origin.requestCount == 2)
        }
    }

    @Test("When the resource changed since the pieces, the origin's 200 is the answer and is stored")
    func completionFindsAChange() async throws {
        try await withCachedSession { origin, cache, session in
            try await cutDownload(origin, cache, session, after: 60_000)
            let key = CacheKey(url: origin.url)
            let changed = Array(Self.body.reversed())
            origin.change(to: changed)

            let whole = try await get(session, origin.url)
            #expect(whole.status == 200)
            #expect(whole.body == changed)
            try await eventually { (try? cache.cache.store.lookup(key, requestHeaders: HeaderFields())) != nil }
            let hit = try await get(session, origin.url)
            #expect(hit.body == changed)
            #expect(origin.requestCount == 2)
        }
    }

    @Test("A plain GET on a key just seen uncacheable goes whole: the pieces are not read or completed")
    func passingMissSkipsPieces() async throws {
        try await withCachedSession { origin, cache, session in
            try await cutDownload(origin, cache, session, after: 60_000)
            let key = CacheKey(url: origin.url)
            // What a response failing the storability gate leaves (hit-for-miss): misses pass.
            cache.cache.noteUncacheable(key)

            let whole = try await get(session, origin.url)
            #expect(whole.status == 200)
            #expect(whole.body == Self.body)
            #expect(origin.rangesAsked == [nil, nil])
            #expect(origin.origin.requests.last?.headerFields["If-Range"] == nil)
        }
    }
}
