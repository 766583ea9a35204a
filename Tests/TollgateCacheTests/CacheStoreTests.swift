import Foundation
import NIOCore
import Testing
import TollgateCache
import TollgateHTTP

@Suite("CacheStore on LMDB", .timeLimit(.minutes(1)))
struct CacheStoreTests {
    let url = "https://example.com/resource"

    func lookup(_ store: CacheStore, _ url: String, _ lines: [String] = []) throws -> CacheEntry? {
        let head = request(lines, url: url)
        return try store.lookup(CacheKey(request: head)!, requestHeaders: head.headerFields)
    }

    @Test("A small body round-trips inline, with filtered headers and its digest")
    func smallRoundTrip() throws {
        try withStore { store, directory in
            let body = pattern(1_000)
            try put(
                store,
                url,
                body: body,
                responseLines: ["Cache-Control: max-age=60", "Set-Cookie: s=1", "Connection: close", "ETag: \"e\""]
            )
            let entry = try #require(try lookup(store, url))
            #expect(try bytes(of: entry) == body)
            guard case .inline = entry.body else {
                Issue.record("expected an inline body")
                return
            }
            #expect(entry.response.bodyLength == 1_000)
            #expect(entry.response.bodySHA256 == SHA256.hex(SHA256.hash(body)))
            #expect(entry.response.headerFields["Content-Length"] == "1000")
            #expect(entry.response.headerFields["Set-Cookie"] == nil)
            #expect(entry.response.headerFields["Connection"] == nil)
            #expect(entry.response.headerFields["ETag"] == "\"e\"")
            #expect(entry.response.url == url)
            #expect(bodyFiles(directory).isEmpty)
        }
    }

    @Test("A large body goes to a file named after the entry, with no temporary file left")
    func largeRoundTrip() throws {
        try withStore(inlineBodyLimit: 1_024) { store, directory in
            let body = pattern(300_000, seed: 9)
            let id = try put(store, url, body: body)
            let entry = try #require(try lookup(store, url))
            #expect(entry.id == id)
            guard case .file(let path, let length) = entry.body else {
                Issue.record("expected a file body")
                return
            }
            #expect(length == 300_000)
            #expect(path.hasPrefix(directory.path + "/bodies/"))
            #expect(try bytes(of: entry) == body)
            #expect(bodyFiles(directory) == [(path as NSString).lastPathComponent])
        }
    }

    @Test("A body streamed in pieces crosses from memory to a file")
    func streamedWriter() throws {
        try withStore(inlineBodyLimit: 4_096) { store, directory in
            let head = request(url: url)
            let writer = try store.beginStore(
                key: CacheKey(request: head)!,
                request: head,
                response: response(["Content-Length: 10000"]),
                requestTime: now,
                responseTime: now
            )
            let body = pattern(10_000, seed: 1)
            for start in stride(from: 0, to: body.count, by: 1_500) {
                try writer.append(buffer(Array(body[start..<min(start + 1_500, body.count)])))
            }
            #expect(bodyFiles(directory).allSatisfy { $0.hasPrefix("tmp-") } && bodyFiles(directory).count == 1)
            try writer.commit()
            #expect(try bytes(of: try #require(try lookup(store, url))) == body)
            #expect(bodyFiles(directory).allSatisfy { $0.hasSuffix(".body") })
            #expect(throws: CacheStoreError.writerFinished) { try writer.append(buffer([1])) }
        }
    }

    @Test("Variants are selected by their Vary'd request fields; a new one replaces the one it would select")
    func variants() throws {
        try withStore { store, _ in
            let lines = ["Cache-Control: max-age=60", "Vary: Accept-Encoding"]
            try put(store, url, body: Array("gzip".utf8), responseLines: lines, requestLines: ["Accept-Encoding: gzip"])
            try put(store, url, body: Array("br".utf8), responseLines: lines, requestLines: ["Accept-Encoding: br"])
            try put(store, url, body: Array("none".utf8), responseLines: lines)
            #expect(
                try bytes(of: try #require(try lookup(store, url, ["Accept-Encoding: gzip"]))) == Array("gzip".utf8)
            )
            #expect(try bytes(of: try #require(try lookup(store, url, ["Accept-Encoding: br"]))) == Array("br".utf8))
            #expect(try bytes(of: try #require(try lookup(store, url))) == Array("none".utf8))
            #expect(try lookup(store, url, ["Accept-Encoding: deflate"]) == nil)
            try put(
                store,
                url,
                body: Array("gzip2".utf8),
                responseLines: lines,
                requestLines: ["Accept-Encoding: gzip"]
            )
            #expect(
                try bytes(of: try #require(try lookup(store, url, ["Accept-Encoding: gzip"]))) == Array("gzip2".utf8)
            )
            let statistics = try store.statistics()
            #expect(statistics.entries == 3)
            #expect(statistics.urls == 1)
        }
    }

    @Test("LRU eviction keeps the store under its capacity and spares recently used entries")
    func lruEviction() throws {
        let clock = TestClock()
        try withStore(maxSize: 40_000, clock: clock) { store, _ in
            let urls = (0..<20).map { "https://example.com/item/\($0)" }
            for url in urls.prefix(10) {
                try put(store, url, body: pattern(1_900))
                clock.advance(1)
            }
            // Touch the oldest entry: it becomes the most recently used.
            #expect(try lookup(store, urls[0]) != nil)
            try store.flush()
            for url in urls.dropFirst(10) {
                try put(store, url, body: pattern(1_900))
                clock.advance(1)
            }
            let statistics = try store.statistics()
            #expect(statistics.bytes <= 40_000)
            #expect(statistics.entries < 20)
            // Each entry is charged about 2.1 kB (body and metadata): 20 need about 43 kB,
            // so the two least recently used (1 and 2, not the touched 0) made room.
            #expect(try lookup(store, urls[0]) != nil)
            #expect(try lookup(store, urls[1]) == nil)
            #expect(try lookup(store, urls[19]) != nil)
            let order = try store.leastRecentlyUsed()
            #expect(order.count == statistics.entries)
        }
    }

    @Test("evict(toFit:) frees room, oldest first")
    func explicitEviction() throws {
        try withStore(maxSize: 100_000) { store, _ in
            for index in 0..<10 { try put(store, "https://example.com/\(index)", body: pattern(4_000)) }
            let before = try store.statistics()
            let evicted = try store.evict(toFit: 100_000 - before.bytes + 10_000)
            #expect(evicted >= 3)
            #expect(try store.statistics().bytes + 10_000 <= 100_000 - (100_000 - before.bytes))
            #expect(try lookup(store, "https://example.com/0") == nil)
            #expect(try lookup(store, "https://example.com/9") != nil)
        }
    }

    @Test("A body shorter than Content-Length is never committed", arguments: [100, 200_000])
    func truncatedNeverCommits(_ declared: Int) throws {
        try withStore(inlineBodyLimit: 1_024) { store, directory in
            let head = request(url: url)
            let writer = try store.beginStore(
                key: CacheKey(request: head)!,
                request: head,
                response: response(["Cache-Control: max-age=60", "Content-Length: \(declared)"]),
                requestTime: now,
                responseTime: now
            )
            try writer.append(buffer(pattern(declared / 2)))
            #expect(throws: CacheStoreError.truncatedBody) { try writer.commit() }
            #expect(try lookup(store, url) == nil)
            #expect(bodyFiles(directory).isEmpty)
            #expect(try store.statistics().entries == 0)
        }
    }

    @Test("A body longer than Content-Length is refused while streaming")
    func overlong() throws {
        try withStore { store, _ in
            let head = request(url: url)
            let writer = try store.beginStore(
                key: CacheKey(request: head)!,
                request: head,
                response: response(["Content-Length: 10"]),
                requestTime: now,
                responseTime: now
            )
            #expect(throws: CacheStoreError.truncatedBody) { try writer.append(buffer(pattern(11))) }
            #expect(throws: CacheStoreError.writerFinished) { try writer.commit() }
            #expect(try lookup(store, url) == nil)
        }
    }

    @Test("A body past 5 % of the capacity is refused, up front or while streaming")
    func sizeLimit() throws {
        try withStore(maxSize: 100_000, inlineBodyLimit: 1_000) { store, directory in
            let head = request(url: url)
            let key = CacheKey(request: head)!
            #expect(throws: CacheStoreError.bodyTooLarge) {
                try store.beginStore(
                    key: key,
                    request: head,
                    response: response(["Content-Length: 5001"]),
                    requestTime: now,
                    responseTime: now
                )
            }
            let writer = try store.beginStore(
                key: key,
                request: head,
                response: response(),
                requestTime: now,
                responseTime: now
            )
            try writer.append(buffer(pattern(4_000)))
            #expect(throws: CacheStoreError.bodyTooLarge) { try writer.append(buffer(pattern(1_001))) }
            #expect(bodyFiles(directory).isEmpty)
            #expect(try lookup(store, url) == nil)
        }
    }

    @Test("Aborting, or dropping, a writer leaves nothing behind")
    func abortAndDrop() throws {
        try withStore(inlineBodyLimit: 10) { store, directory in
            let head = request(url: url)
            let key = CacheKey(request: head)!
            let writer = try store.beginStore(
                key: key,
                request: head,
                response: response(),
                requestTime: now,
                responseTime: now
            )
            try writer.append(buffer(pattern(100)))
            #expect(bodyFiles(directory).count == 1)
            writer.abort()
            #expect(bodyFiles(directory).isEmpty)
            do {
                let dropped = try store.beginStore(
                    key: key,
                    request: head,
                    response: response(),
                    requestTime: now,
                    responseTime: now
                )
                try dropped.append(buffer(pattern(100)))
                #expect(bodyFiles(directory).count == 1)
            }
            #expect(bodyFiles(directory).isEmpty)
            #expect(try lookup(store, url) == nil)
        }
    }

    @Test("Reopening keeps entries, totals and the hit and miss counters")
    func reopen() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        do {
            let store = try CacheStore(options: options(directory, inlineBodyLimit: 1_024))
            try put(store, url, body: pattern(500))
            try put(store, url + "/big", body: pattern(50_000))
            _ = try lookup(store, url)
            _ = try lookup(store, url + "/absent")
            store.close()
            #expect(throws: CacheStoreError.closed) { try lookup(store, url) }
        }
        let store = try CacheStore(options: options(directory, inlineBodyLimit: 1_024))
        defer { store.close() }
        #expect(store.sweptOrphans == 0)
        #expect(try bytes(of: try #require(try lookup(store, url))) == pattern(500))
        #expect(try bytes(of: try #require(try lookup(store, url + "/big"))) == pattern(50_000))
        let statistics = try store.statistics()
        #expect(statistics.entries == 2)
        #expect(statistics.hits == 3)
        #expect(statistics.misses == 1)
        #expect(statistics.bytes > 50_000)
    }

    @Test("Orphan body files and temporary files are swept on open; referenced ones stay")
    func sweep() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        do {
            let store = try CacheStore(options: options(directory, inlineBodyLimit: 1_024))
            try put(store, url, body: pattern(5_000))
            store.close()
        }
        let bodies = directory.path + "/bodies/"
        let kept = bodyFiles(directory)
        #expect(kept.count == 1)
        // A crash mid-write, and a crash between a body's rename and its LMDB commit.
        _ = FileManager.default.createFile(atPath: bodies + "tmp-7-abc", contents: Data([1, 2]))
        _ = FileManager.default.createFile(atPath: bodies + "00000000000000ff.body", contents: Data([3]))
        _ = FileManager.default.createFile(atPath: bodies + "README", contents: Data())
        let store = try CacheStore(options: options(directory, inlineBodyLimit: 1_024))
        defer { store.close() }
        #expect(store.sweptOrphans == 2)
        #expect(bodyFiles(directory) == (kept + ["README"]).sorted())
        #expect(try bytes(of: try #require(try lookup(store, url))) == pattern(5_000))
    }

    @Test("verify detects corrupted, truncated and missing body files, and repair removes them")
    func verify() throws {
        try withStore(inlineBodyLimit: 1_024) { store, directory in
            let ids = try (0..<4).map {
                try put(store, "https://example.com/\($0)", body: pattern(4_000, seed: UInt8($0)))
            }
            #expect(try store.verify().isClean)
            #expect(try store.verify().checked == 4)
            let path = { (id: CacheEntryID) -> String in
                let hex = String(id.rawValue, radix: 16)
                return directory.path + "/bodies/" + String(repeating: "0", count: 16 - hex.count) + hex + ".body"
            }
            var corrupted = try Data(contentsOf: URL(fileURLWithPath: path(ids[0])))
            corrupted[100] ^= 0xFF
            try corrupted.write(to: URL(fileURLWithPath: path(ids[0])))
            try Data(pattern(10)).write(to: URL(fileURLWithPath: path(ids[1])))
            try FileManager.default.removeItem(atPath: path(ids[2]))
            let report = try store.verify()
            #expect(report.checked == 4)
            #expect(Set(report.problems.map(\.kind)) == [.digestMismatch, .lengthMismatch, .missingBody])
            #expect(report.problems.first { $0.kind == .digestMismatch }?.url == "https://example.com/0")
            #expect(report.removed == 0)
            let repaired = try store.verify(repair: true)
            #expect(repaired.removed == 3)
            #expect(try store.verify().isClean)
            #expect(try store.statistics().entries == 1)
        }
    }

    @Test("verify checks inline bodies too")
    func verifyInline() throws {
        try withStore { store, _ in
            try put(store, url, body: pattern(100))
            let report = try store.verify()
            #expect(report.checked == 1)
            #expect(report.isClean)
        }
    }

    @Test("Purging a URL removes every variant and its files")
    func purge() throws {
        try withStore(inlineBodyLimit: 100) { store, directory in
            let lines = ["Cache-Control: max-age=60", "Vary: Accept-Language"]
            for language in ["en", "fr", "de"] {
                try put(
                    store,
                    url,
                    body: pattern(1_000),
                    responseLines: lines,
                    requestLines: ["Accept-Language: \(language)"]
                )
            }
            try put(store, url + "/other", body: pattern(10))
            #expect(bodyFiles(directory).count == 3)
            #expect(try store.remove(url: "HTTPS://EXAMPLE.com:443/resource#x") == 3)
            #expect(try lookup(store, url, ["Accept-Language: fr"]) == nil)
            #expect(bodyFiles(directory).isEmpty)
            #expect(try store.statistics().entries == 1)
            #expect(try store.remove(url: url) == 0)
            #expect(throws: CacheStoreError.invalidURL) { try store.remove(url: "not a url") }
        }
    }

    @Test("A 304 updates the stored headers and keeps the body; a mismatched one is refused")
    func updateAfter304() throws {
        try withStore(inlineBodyLimit: 100) { store, _ in
            for (target, size) in [(url, 50), (url + "/file", 5_000)] {
                try put(
                    store,
                    target,
                    body: pattern(size),
                    responseLines: ["Cache-Control: max-age=60", "ETag: \"v1\"", "X-A: 1"]
                )
                let entry = try #require(try lookup(store, target))
                let updated = try #require(
                    try store.updateHeaders(
                        of: entry.id,
                        notModified: response(["Cache-Control: max-age=600", "ETag: \"v1\""], status: 304),
                        requestTime: now.addingTimeInterval(10),
                        responseTime: now.addingTimeInterval(11)
                    )
                )
                #expect(updated.headerFields["Cache-Control"] == "max-age=600")
                let again = try #require(try lookup(store, target))
                #expect(again.response.headerFields["Cache-Control"] == "max-age=600")
                #expect(again.response.headerFields["X-A"] == "1")
                #expect(again.response.responseTime == now.addingTimeInterval(11))
                #expect(try bytes(of: again) == pattern(size))
                #expect(
                    try store.updateHeaders(
                        of: entry.id,
                        notModified: response(["ETag: \"v2\""], status: 304),
                        requestTime: now,
                        responseTime: now
                    ) == nil
                )
            }
            #expect(try store.verify().isClean)
        }
    }

    @Test("A body file handed over is moved into the store")
    func handOver() throws {
        try withStore(inlineBodyLimit: 1_024) { store, directory in
            let source = directory.path + "-download"
            defer { try? FileManager.default.removeItem(atPath: source) }
            try Data(pattern(20_000)).write(to: URL(fileURLWithPath: source))
            let head = request(url: url)
            try store.store(
                key: CacheKey(request: head)!,
                request: head,
                response: response(["Content-Length: 20000"]),
                bodyFile: source,
                requestTime: now,
                responseTime: now
            )
            #expect(!FileManager.default.fileExists(atPath: source))
            let entry = try #require(try lookup(store, url))
            #expect(try bytes(of: entry) == pattern(20_000))
            #expect(entry.response.bodySHA256 == SHA256.hex(SHA256.hash(pattern(20_000))))
            #expect(try store.verify().isClean)
        }
    }

    @Test("removeAll empties the store but keeps the counters")
    func removeAll() throws {
        try withStore(inlineBodyLimit: 100) { store, directory in
            try put(store, url, body: pattern(1_000))
            try put(store, url + "/2", body: pattern(10))
            _ = try lookup(store, url)
            try store.removeAll()
            let statistics = try store.statistics()
            #expect(statistics.entries == 0)
            #expect(statistics.bytes == 0)
            #expect(statistics.hits == 1)
            #expect(bodyFiles(directory).isEmpty)
            #expect(try lookup(store, url) == nil)
        }
    }

    @Test("Lookups from several threads while storing see whole entries")
    func concurrentLookups() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = try CacheStore(options: options(directory, inlineBodyLimit: 2_048))
        defer { store.close() }
        let urls = (0..<20).map { "https://example.com/c/\($0)" }
        let expected = pattern(3_000, seed: 5)
        try await withThrowingTaskGroup(of: Int.self) { group in
            group.addTask {
                for url in urls { try put(store, url, body: expected) }
                return 0
            }
            for _ in 0..<3 {
                group.addTask {
                    var seen = 0
                    for _ in 0..<25 {
                        for url in urls {
                            let head = request(url: url)
                            if let entry = try store.lookup(CacheKey(request: head)!, requestHeaders: head.headerFields)
                            {
                                #expect(try bytes(of: entry) == expected)
                                seen += 1
                            }
                        }
                    }
                    return seen
                }
            }
            for try await _ in group {}
        }
        #expect(try store.statistics().entries == 20)
    }
}
