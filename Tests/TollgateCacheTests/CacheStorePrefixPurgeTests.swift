import Testing
import TollgateHTTP

@testable import TollgateCache

@Suite("Purging every URL under a prefix (URL*)")
struct CacheStorePrefixPurgeTests {
    private func lookup(_ store: CacheStore, _ url: String, _ lines: [String]) throws -> CacheEntry? {
        let head = request(lines, url: url)
        return try store.lookup(CacheKey(request: head)!, requestHeaders: head.headerFields)
    }

    @Test("Every variant of every URL under the prefix goes, body files too; URLs beside it stay")
    func purgesUnderThePrefix() throws {
        try withStore(inlineBodyLimit: 100) { store, directory in
            let lines = ["Cache-Control: max-age=60", "Vary: Accept-Language"]
            for language in ["en", "fr"] {
                try put(store, "https://repo.example/snapshots/a.jar", body: pattern(1_000), responseLines: lines, requestLines: ["Accept-Language: \(language)"])
            }
            try put(store, "https://repo.example/snapshots/b.jar?v=2", body: pattern(10))
            // A URL too long for an LMDB key is stored under a hash: found by its record's key.
            let long = "https://repo.example/snapshots/" + String(repeating: "x", count: 600)
            try put(store, long, body: pattern(10))
            try put(store, "https://repo.example/snapshots-old/c.jar", body: pattern(10))
            try put(store, "https://repo.example/releases/d.jar", body: pattern(1_000))
            try put(store, "https://other.example/snapshots/e.jar", body: pattern(10))

            let prefix = try #require(CacheStore.urlPrefix("HTTPS://Repo.Example:443/snapshots/"))
            #expect(prefix == "https://repo.example/snapshots/")
            #expect(try store.remove(urlPrefix: prefix) == 4)
            for gone in ["https://repo.example/snapshots/a.jar", "https://repo.example/snapshots/b.jar?v=2", long] {
                #expect(try lookup(store, gone, ["Accept-Language: en"]) == nil, "\(gone)")
            }
            for kept in ["https://repo.example/snapshots-old/c.jar", "https://repo.example/releases/d.jar", "https://other.example/snapshots/e.jar"] {
                #expect(try lookup(store, kept, []) != nil, "\(kept)")
            }
            #expect(bodyFiles(directory).count == 1, "the releases body alone: \(bodyFiles(directory))")
            #expect(try store.statistics().entries == 3)
            #expect(try store.statistics().urls == 3)
            #expect(try store.verify().isClean)
            #expect(try store.remove(urlPrefix: prefix) == 0)
        }
    }

    @Test("A URL* purge reads the keys under its prefix, and the few hashed ones, not every record")
    func readsOnlyUnderThePrefix() throws {
        try withStore { store, _ in
            for index in 0..<100 { try put(store, "https://repo.example/a/\(index).jar", body: pattern(10)) }
            for index in 0..<3 { try put(store, "https://repo.example/b/\(index).jar", body: pattern(10)) }
            try put(store, "https://repo.example/b/" + String(repeating: "y", count: 600), body: pattern(10))
            try put(store, "https://repo.example/a/" + String(repeating: "z", count: 600), body: pattern(10))
            try put(store, "https://repo.example/c/1.jar", body: pattern(10))
            let matches = try store.prefixMatches("https://repo.example/b/")
            #expect(matches.ids.count == 4)
            #expect(matches.examined == 5, "the three text keys under b/ and the two hashed keys, of 106")
            #expect(try store.remove(urlPrefix: "https://repo.example/b/") == 4)
            #expect(try store.statistics().entries == 102)
            #expect(try store.prefixMatches("https://repo.example/").ids.count == 102)
            #expect(try store.verify().isClean)
        }
    }

    @Test("A prefix is an absolute http(s) URL with a path; what follows the host is kept as written")
    func prefixForms() {
        #expect(CacheStore.urlPrefix("http://Host.Example:80/a%2Fb?q=") == "http://host.example/a%2Fb?q=")
        #expect(CacheStore.urlPrefix("https://host.example:8443/") == "https://host.example:8443/")
        #expect(CacheStore.urlPrefix("https://host.example") == nil)
        #expect(CacheStore.urlPrefix("ftp://host.example/") == nil)
        #expect(CacheStore.urlPrefix("/snapshots/") == nil)
    }
}
