import Foundation
import Testing
import TollgateCache
import TollgateHTTP
import TollgateStore
import TollgateTesting

/// A store opened read-only: a cache handed to a build as it was warmed (a read-only mount, a
/// copy the build may not change) serves what it holds and writes nothing.
@Suite("CacheStore opened read-only", .timeLimit(.minutes(1)))
struct CacheStoreReadOnlyTests {
    private func readOnlyOptions(_ directory: TemporaryDirectory) -> CacheStoreOptions {
        var options = options(directory)
        options.readOnly = true
        return options
    }

    @Test("Lookups serve inline and file bodies; every write throws readOnly; not a byte of the store changes")
    func servesAndWritesNothing() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let writable = try CacheStore(options: options(directory))
        try put(writable, "https://example.com/small", body: Array("small body".utf8))
        try put(writable, "https://example.com/large", body: pattern(200_000))
        writable.close()
        let before = try directoryContents(directory.path, excluding: ["lock.mdb"])
        #expect(bodyFiles(directory).count == 1)

        let store = try CacheStore(options: readOnlyOptions(directory))
        #expect(store.isReadOnly)
        let small = request(url: "https://example.com/small")
        let large = request(url: "https://example.com/large")
        let missing = request(url: "https://example.com/missing")
        for _ in 0..<3 {
            let entry = try #require(try store.lookup(CacheKey(request: small)!, requestHeaders: small.headerFields))
            #expect(try bytes(of: entry) == Array("small body".utf8))
        }
        let largeEntry = try #require(try store.lookup(CacheKey(request: large)!, requestHeaders: large.headerFields))
        #expect(try bytes(of: largeEntry) == pattern(200_000))
        #expect(try store.lookup(CacheKey(request: missing)!, requestHeaders: [:]) == nil)

        #expect(throws: CacheStoreError.readOnly) { try put(store, "https://example.com/new", body: [1, 2, 3]) }
        #expect(throws: CacheStoreError.readOnly) {
            try store.beginStore(key: CacheKey(request: missing)!, request: missing, response: response(["Cache-Control: max-age=60"]),
                requestTime: now, responseTime: now)
        }
        #expect(throws: CacheStoreError.readOnly) {
            try store.updateHeaders(of: largeEntry.id, notModified: response(["Cache-Control: max-age=600"], status: 304),
                requestTime: now, responseTime: now)
        }
        #expect(throws: CacheStoreError.readOnly) { try store.remove(url: "https://example.com/small") }
        #expect(throws: CacheStoreError.readOnly) { try store.remove(id: largeEntry.id) }
        #expect(throws: CacheStoreError.readOnly) { try store.removeAll() }
        #expect(throws: CacheStoreError.readOnly) { try store.evict(toFit: 1 << 40) }
        #expect(throws: CacheStoreError.readOnly) { try store.verify(repair: true) }
        #expect(throws: CacheStoreError.readOnly) {
            try store.beginPiece(key: CacheKey(request: missing)!, request: missing,
                response: response(["ETag: \"a\"", "Content-Range: bytes 0-1/10", "Content-Length: 2"], status: 206),
                requestTime: now, responseTime: now)
        }
        #expect(try store.verify().problems.isEmpty)

        // Hits and misses are counted for statistics, in memory only.
        let statistics = try store.statistics()
        #expect(statistics.entries == 2)
        #expect(statistics.hits == 4)
        #expect(statistics.misses == 1)
        try store.flush()
        store.close()
        #expect(try directoryContents(directory.path, excluding: ["lock.mdb"]) == before)  // no file added, none changed

        // Nothing of the read-only opening reached the store.
        let reopened = try CacheStore(options: options(directory))
        defer { reopened.close() }
        let totals = try reopened.statistics()
        #expect(totals.hits == 0 && totals.misses == 0)
        #expect(totals.entries == 2)
    }

    @Test("Where LMDB's lock file cannot be opened read-write, the store is read without the reader table")
    func readsWithoutTheLockFile() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let writable = try CacheStore(options: options(directory))
        try put(writable, "https://example.com/a", body: Array("body of a".utf8))
        writable.close()
        // A lock.mdb that cannot be opened for writing (here a directory in its place: root may
        // write any file, so permissions would not stop a test running as root).
        try FileManager.default.removeItem(atPath: directory.path + "/lock.mdb")
        try FileManager.default.createDirectory(atPath: directory.path + "/lock.mdb", withIntermediateDirectories: false)
        #expect(throws: (any Error).self) { _ = try CacheStore(options: options(directory)) }

        let store = try CacheStore(options: readOnlyOptions(directory))
        defer { store.close() }
        let head = request(url: "https://example.com/a")
        let entry = try #require(try store.lookup(CacheKey(request: head)!, requestHeaders: head.headerFields))
        #expect(try bytes(of: entry) == Array("body of a".utf8))
    }

    @Test("A directory with no store in it is not made one by a read-only opening")
    func createsNothing() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        #expect(throws: (any Error).self) { _ = try CacheStore(options: readOnlyOptions(directory)) }
        #expect(!FileManager.default.fileExists(atPath: directory.path))
        try FileManager.default.createDirectory(atPath: directory.path, withIntermediateDirectories: false)
        #expect(throws: (any Error).self) { _ = try CacheStore(options: readOnlyOptions(directory)) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0 != "lock.mdb" }.isEmpty)
    }
}
