import Testing
import TollgateHTTP

@testable import TollgateCache

@Suite("Purging by tag (cache.tag-header)")
struct CacheStoreTagPurgeTests {
    private func lookup(_ store: CacheStore, _ url: String, _ lines: [String] = []) throws -> CacheEntry? {
        let head = request(lines, url: url)
        return try store.lookup(CacheKey(request: head)!, requestHeaders: head.headerFields)
    }

    /// Keeps the first 400 of 1,000 bytes of `url` as partial content tagged `tags`.
    private func keepPiece(_ store: CacheStore, _ url: String, tags: String) throws {
        let head = response(
            ["Cache-Control: max-age=600", "ETag: \"v1\"", "Content-Range: bytes 0-399/1000", "Content-Length: 400", "Surrogate-Key: \(tags)"],
            status: 206
        )
        let key = CacheKey(url: HTTPURL(string: url)!)
        let writer = try #require(try store.beginPiece(key: key, request: request(url: url), response: head, requestTime: now, responseTime: now))
        try writer.append(buffer(pattern(400)))
        _ = try writer.finish()
    }

    @Test("Every response naming a tag goes, body files and pieces too; other tags, other fields and other variants stay")
    func purgesTagged() throws {
        try withStore(inlineBodyLimit: 100) { store, directory in
            try put(store, "https://shop.example/p/1", body: pattern(1_000), responseLines: ["Cache-Control: max-age=60", "Surrogate-Key: product-1 list"])
            try put(store, "https://shop.example/p/2", body: pattern(10), responseLines: ["Cache-Control: max-age=60", "Surrogate-Key: product-2  list"])
            // Tags on two lines, separated by commas: every line counts.
            try put(store, "https://shop.example/home", body: pattern(10), responseLines: ["Cache-Control: max-age=60", "Surrogate-Key: home", "Surrogate-Key: a,list"])
            // Tags compare exactly: a longer tag, another case, another field.
            try put(store, "https://shop.example/lists", body: pattern(10), responseLines: ["Cache-Control: max-age=60", "Surrogate-Key: lists List"])
            try put(store, "https://shop.example/other", body: pattern(10), responseLines: ["Cache-Control: max-age=60", "Cache-Tag: list"])
            // Of two variants of one URL, only the tagged one goes.
            let varied = "https://shop.example/v"
            try put(store, varied, body: pattern(10), responseLines: ["Cache-Control: max-age=60", "Vary: Accept-Language", "Surrogate-Key: list"], requestLines: ["Accept-Language: en"])
            try put(store, varied, body: pattern(10), responseLines: ["Cache-Control: max-age=60", "Vary: Accept-Language"], requestLines: ["Accept-Language: fr"])
            try keepPiece(store, "https://shop.example/big", tags: "video list")
            try keepPiece(store, "https://shop.example/big2", tags: "video")

            #expect(try store.remove(taggedWith: ["list"], in: "surrogate-key") == 4)
            for gone in ["https://shop.example/p/1", "https://shop.example/p/2", "https://shop.example/home"] {
                #expect(try lookup(store, gone) == nil, "\(gone)")
            }
            #expect(try lookup(store, varied, ["Accept-Language: en"]) == nil)
            #expect(try lookup(store, varied, ["Accept-Language: fr"]) != nil)
            for kept in ["https://shop.example/lists", "https://shop.example/other"] {
                #expect(try lookup(store, kept) != nil, "\(kept)")
            }
            #expect(store.partialContent(for: CacheKey(url: HTTPURL(string: "https://shop.example/big")!)) == nil)
            #expect(store.partialContent(for: CacheKey(url: HTTPURL(string: "https://shop.example/big2")!)) != nil)
            #expect(bodyFiles(directory).filter { !$0.hasPrefix("partial-") }.isEmpty, "\(bodyFiles(directory))")
            #expect(bodyFiles(directory).filter { $0.hasPrefix("partial-") }.count == 1)
            #expect(try store.statistics().entries == 3)
            #expect(try store.verify().isClean)
            #expect(try store.remove(taggedWith: ["list"], in: "Surrogate-Key") == 0)
            // Several tags at once: any of them.
            #expect(try store.remove(taggedWith: ["lists", "nothing"], in: "Surrogate-Key") == 1)
            #expect(try store.remove(taggedWith: ["video"], in: "Surrogate-Key") == 0)
            #expect(store.partialContent(for: CacheKey(url: HTTPURL(string: "https://shop.example/big2")!)) == nil)
        }
    }

    @Test("A prefix purge removes pieces of URLs under it too")
    func prefixPurgesPieces() throws {
        try withStore { store, _ in
            try keepPiece(store, "https://shop.example/media/a", tags: "x")
            try keepPiece(store, "https://shop.example/other/b", tags: "x")
            #expect(try store.remove(urlPrefix: "https://shop.example/media/") == 0)
            #expect(store.partialContent(for: CacheKey(url: HTTPURL(string: "https://shop.example/media/a")!)) == nil)
            #expect(store.partialContent(for: CacheKey(url: HTTPURL(string: "https://shop.example/other/b")!)) != nil)
        }
    }

    @Test("Tags are the pieces between spaces, tabs and commas")
    func tagSyntax() {
        #expect(CacheTags.tags(in: " a  b,c,\td ,").map(String.init) == ["a", "b", "c", "d"])
        #expect(CacheTags.tags(in: "").isEmpty)
        var fields = HeaderFields()
        fields.add(name: "xkey", value: "k1, k2")
        #expect(CacheTags.field("XKey", in: fields, namesAnyOf: ["k2"]))
        #expect(!CacheTags.field("XKey", in: fields, namesAnyOf: ["k"]))
        #expect(!CacheTags.field("Surrogate-Key", in: fields, namesAnyOf: ["k1"]))
    }
}
