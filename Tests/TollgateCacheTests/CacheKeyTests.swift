import Testing
import TollgateHTTP

@testable import TollgateCache

@Suite("CacheKey and its normalizer", .timeLimit(.minutes(1)))
struct CacheKeyTests {
    @Test(
        "URLs are normalized: scheme and host lowercased, default port and fragment dropped",
        arguments: [
            ("HTTPS://Example.COM:443/a/B?Q=1#frag", "https://example.com/a/B?Q=1"),
            ("http://example.com:80", "http://example.com/"),
            ("http://example.com:8080/x", "http://example.com:8080/x"),
            ("https://example.com:80/x", "https://example.com:80/x"),
            ("https://[::1]:8443/x?b=2&a=1", "https://[::1]:8443/x?b=2&a=1"),
            ("https://example.com?q", "https://example.com/?q"),
        ]
    )
    func normalization(_ input: String, _ expected: String) throws {
        let key = try #require(CacheKey(request: request(url: input)))
        #expect(key.url == expected)
        #expect(key.method == .get)
        #expect(key.description == "GET " + expected)
    }

    @Test("HEAD looks up the GET key; other methods have none")
    func methods() {
        #expect(CacheKey(request: request(method: .head)) == CacheKey(request: request()))
        #expect(CacheKey(request: request(method: .post)) == nil)
        #expect(CacheKey(request: request(method: .options)) == nil)
    }

    @Test("Keys made apart are equal and hash alike when their text is; others are not")
    func equalityAndHash() throws {
        let made = try #require(CacheKey(request: request(url: "HTTP://Example.com:80/a?b")))
        let parsed = try #require(CacheKey(storedDescription: "GET http://example.com/a?b"))
        #expect(made == parsed)
        #expect(made.hashValue == parsed.hashValue)
        #expect(Set([made, parsed]).count == 1)
        let other = try #require(CacheKey(storedDescription: "GET http://example.com/a?c"))
        #expect(made != other)
        #expect(CacheKey(method: .head, normalizedURL: made.url) != made)
        #expect(Set([made, other]).count == 2)
    }

    @Test(
        "The normalizer drops, sorts or ignores query parameters",
        arguments: [
            (CacheKeyNormalizer.standard, "/p?b=2&utm_source=x&a=1&a=0"),
            (CacheKeyNormalizer(droppedQueryParameters: ["utm_source"]), "/p?b=2&a=1&a=0"),
            (CacheKeyNormalizer(sortsQueryParameters: true), "/p?a=1&a=0&b=2&utm_source=x"),
            (CacheKeyNormalizer(droppedQueryParameters: ["utm_source", "a"], sortsQueryParameters: true), "/p?b=2"),
            (CacheKeyNormalizer(droppedQueryParameters: ["a", "b", "utm_source"]), "/p"),
            (CacheKeyNormalizer(ignoresQuery: true), "/p"),
        ]
    )
    func normalizer(_ normalizer: CacheKeyNormalizer, _ expected: String) {
        #expect(normalizer.normalize(pathAndQuery: "/p?b=2&utm_source=x&a=1&a=0") == expected)
        #expect(normalizer.normalize(pathAndQuery: "/p") == "/p")
    }

    @Test("Two URLs differing only in a dropped parameter share a key")
    func sharedKey() {
        let normalizer = CacheKeyNormalizer(droppedQueryParameters: ["session"])
        let a = CacheKey(request: request(url: "https://e.example/x?id=1&session=aa"), normalizer: normalizer)
        let b = CacheKey(request: request(url: "https://e.example/x?session=bb&id=1"), normalizer: normalizer)
        #expect(a == b)
        #expect(CacheKey(request: request(url: "https://e.example/x?id=2"), normalizer: normalizer) != a)
    }

    @Test("The LMDB key is the description's bytes, or # and the hex SHA-256 of them when long")
    func storageKeyIsTheDescription() throws {
        let short = CacheKey(url: try #require(HTTPURL(string: "https://example.com/a?b=1")))
        #expect(short.storageKey == Array(short.description.utf8))
        let long = CacheKey(url: try #require(HTTPURL(string: "https://example.com/" + String(repeating: "x", count: 500))))
        #expect(long.storageKey == Array("#".utf8) + Array(SHA256.hex(SHA256.hash(Array(long.description.utf8))).utf8))
    }

    @Test("The key built in place is the description's bytes, or their hash past the text limit, at every length around it")
    func storageKeyInPlace() throws {
        func expected(_ key: CacheKey) -> [UInt8] {
            let text = Array(key.description.utf8)
            return text.count > CacheKey.longestTextKey ? Array("#".utf8) + Array(SHA256.hex(SHA256.hash(text)).utf8) : text
        }
        // "GET https://example.com/" is 24 bytes: paths around the limit of 400.
        for pathLength in [1, 10, 375, 376, 377, 378, 600] {
            let key = CacheKey(url: try #require(HTTPURL(string: "https://example.com/" + String(repeating: "p", count: pathLength))))
            #expect(key.withStorageKey { Array($0) } == expected(key), "path of \(pathLength)")
        }
        let unicode = CacheKey(url: try #require(HTTPURL(string: "https://example.com/ü?q=é")))
        #expect(unicode.withStorageKey { Array($0) } == expected(unicode))
    }
}
