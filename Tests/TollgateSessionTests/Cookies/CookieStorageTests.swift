import Foundation
import NIOConcurrencyHelpers
import Testing
import TollgateHTTP

@testable import TollgateSession

/// A clock tests move by hand.
final class TestClock: @unchecked Sendable {
    private let lock = NIOLock()
    private var _now = Date(timeIntervalSince1970: 1_700_000_000)
    var now: Date { lock.withLock { _now } }
    func advance(_ seconds: TimeInterval) { lock.withLock { _now += seconds } }
}

@Suite("Cookie storage: matching, order, expiry, eviction, accept policies", .timeLimit(.minutes(1)))
struct CookieStorageTests {
    static func url(_ text: String) -> HTTPURL { HTTPURL(string: text)! }

    static func storage(_ clock: TestClock = TestClock(), limits: CookieStorage.Limits = .init()) -> CookieStorage {
        CookieStorage(publicSuffixes: .system, limits: limits, clock: { clock.now })
    }

    @Test("Domain matching: host-only only for the exact host; Domain cookies for the domain and below")
    func domainMatching() {
        let storage = Self.storage()
        storage.store(setCookieValues: ["host=1"], from: Self.url("http://example.com/"), policy: .always)
        storage.store(
            setCookieValues: ["dom=2; Domain=example.com"],
            from: Self.url("http://example.com/"),
            policy: .always
        )
        #expect(storage.cookieHeader(for: Self.url("http://example.com/")) == "host=1; dom=2")
        #expect(storage.cookieHeader(for: Self.url("http://www.example.com/")) == "dom=2")
        #expect(storage.cookieHeader(for: Self.url("http://a.b.example.com/")) == "dom=2")
        #expect(storage.cookieHeader(for: Self.url("http://notexample.com/")) == nil)
        #expect(storage.cookieHeader(for: Self.url("http://example.com.evil.net/")) == nil)
        #expect(Cookie.domainMatches("www.example.com", "example.com"))
        #expect(!Cookie.domainMatches("wwwexample.com", "example.com"))
        #expect(!Cookie.domainMatches("1.2.3.4", "2.3.4"))
    }

    @Test("Path matching per §5.1.4")
    func pathMatching() {
        #expect(Cookie.pathMatches("/docs", "/docs"))
        #expect(Cookie.pathMatches("/docs/", "/docs"))
        #expect(Cookie.pathMatches("/docs/web", "/docs"))
        #expect(Cookie.pathMatches("/docs/web", "/docs/"))
        #expect(!Cookie.pathMatches("/docsets", "/docs"))
        #expect(!Cookie.pathMatches("/doc", "/docs"))
        #expect(!Cookie.pathMatches("/", "/docs"))
    }

    @Test("Secure cookies go only to https")
    func secureOnlyOverHTTPS() {
        let storage = Self.storage()
        storage.store(setCookieValues: ["s=1; Secure", "p=2"], from: Self.url("https://example.com/"), policy: .always)
        #expect(storage.cookieHeader(for: Self.url("https://example.com/")) == "s=1; p=2")
        #expect(storage.cookieHeader(for: Self.url("http://example.com/")) == "p=2")
    }

    @Test("Cookie header order: longer paths first, then earlier created; replacing keeps the creation time")
    func headerOrder() {
        let clock = TestClock()
        let storage = Self.storage(clock)
        let origin = Self.url("http://example.com/")
        storage.store(setCookieValues: ["first=1; Path=/"], from: origin, policy: .always)
        clock.advance(1)
        storage.store(setCookieValues: ["deep=2; Path=/a/b"], from: origin, policy: .always)
        clock.advance(1)
        storage.store(setCookieValues: ["second=3; Path=/"], from: origin, policy: .always)
        clock.advance(1)
        storage.store(setCookieValues: ["mid=4; Path=/a"], from: origin, policy: .always)
        #expect(storage.cookieHeader(for: Self.url("http://example.com/a/b/c")) == "deep=2; mid=4; first=1; second=3")
        clock.advance(1)
        storage.store(setCookieValues: ["first=updated; Path=/"], from: origin, policy: .always)
        #expect(storage.cookieHeader(for: Self.url("http://example.com/")) == "first=updated; second=3")
        // Same name, other path: a different cookie.
        storage.store(setCookieValues: ["first=other; Path=/a"], from: origin, policy: .always)
        #expect(storage.cookies.filter { $0.name == "first" }.count == 2)
    }

    @Test("Expiry: an expired cookie is not sent and is removed; an expired Set-Cookie deletes its cookie")
    func expiry() {
        let clock = TestClock()
        let storage = Self.storage(clock)
        let origin = Self.url("http://example.com/")
        storage.store(setCookieValues: ["short=1; Max-Age=10", "long=2; Max-Age=1000"], from: origin, policy: .always)
        #expect(storage.cookieHeader(for: origin) == "short=1; long=2")
        clock.advance(11)
        #expect(storage.cookieHeader(for: origin) == "long=2")
        #expect(storage.cookies.map(\.name) == ["long"])
        storage.store(
            setCookieValues: ["long=gone; Expires=Thu, 01 Jan 1970 00:00:00 GMT"],
            from: origin,
            policy: .always
        )
        #expect(storage.cookieHeader(for: origin) == nil)
        #expect(storage.cookies.isEmpty)
    }

    @Test("Eviction: past the per-domain limit the domain's least recently used go; past the total, the oldest of all")
    func eviction() {
        let clock = TestClock()
        let storage = Self.storage(clock, limits: CookieStorage.Limits(perDomain: 3, total: 5))
        let a = Self.url("http://a.example/")
        for index in 0..<3 {
            storage.store(setCookieValues: ["a\(index)=x"], from: a, policy: .always)
            clock.advance(1)
        }
        storage.store(setCookieValues: ["a0=y"], from: a, policy: .always)  // a0 used again: a1 is now the oldest
        clock.advance(1)
        storage.store(setCookieValues: ["a3=x"], from: a, policy: .always)
        #expect(storage.cookies.map(\.name).sorted() == ["a0", "a2", "a3"])  // a1: least recently used
        let b = Self.url("http://b.example/")
        for index in 0..<3 {
            clock.advance(1)
            storage.store(setCookieValues: ["b\(index)=x"], from: b, policy: .always)
        }
        #expect(storage.cookies.count == 5)
        #expect(!storage.cookies.contains { $0.name == "a2" })
    }

    @Test("Accept policies: always, never, main-document-domain (same site as the main document)")
    func acceptPolicies() {
        let storage = Self.storage()
        let shop = Self.url("https://shop.example.com/")
        #expect(
            storage.store(setCookieValues: ["n=1"], from: shop, mainDocumentURL: nil, policy: .never) == [
                .failure(.policy)
            ]
        )
        #expect(storage.cookies.isEmpty)
        let sameSite = storage.store(
            setCookieValues: ["m=1"],
            from: shop,
            mainDocumentURL: Self.url("https://www.example.com/"),
            policy: .onlyFromMainDocumentDomain
        )
        #expect((try? sameSite.first?.get())?.name == "m")
        let thirdParty = storage.store(
            setCookieValues: ["t=1"],
            from: Self.url("https://tracker.net/"),
            mainDocumentURL: Self.url("https://www.example.com/"),
            policy: .onlyFromMainDocumentDomain
        )
        #expect(thirdParty == [.failure(.policy)])
        storage.store(
            setCookieValues: ["own=1"],
            from: Self.url("https://tracker.net/"),
            policy: .onlyFromMainDocumentDomain
        )
        #expect(storage.cookies.map(\.name).sorted() == ["m", "own"])
        let refused = storage.store(
            setCookieValues: ["x=1; Domain=com"],
            from: shop,
            mainDocumentURL: nil,
            policy: .always
        )
        #expect(refused == [.failure(.publicSuffix)])
    }

    @Test("removeCookies(forDomain:) and removeAll")
    func removal() {
        let storage = Self.storage()
        storage.store(
            setCookieValues: ["a=1; Domain=example.com"],
            from: Self.url("http://www.example.com/"),
            policy: .always
        )
        storage.store(setCookieValues: ["b=1"], from: Self.url("http://www.example.com/"), policy: .always)
        storage.store(setCookieValues: ["c=1"], from: Self.url("http://other.org/"), policy: .always)
        #expect(storage.removeCookies(forDomain: ".example.com") == 2)
        #expect(storage.cookies.map(\.name) == ["c"])
        storage.removeAll()
        #expect(storage.cookies.isEmpty)
    }

    @Test("A cookie's description never shows its value")
    func masked() throws {
        let cookie = try Cookie.parse(setCookie: "sid=topsecret; Path=/", from: Self.url("http://example.com/")).get()
        #expect(!cookie.description.contains("topsecret"))
        #expect(cookie.description.contains("sid=****"))
    }
}

@Suite("The public suffix list", .timeLimit(.minutes(1)))
struct PublicSuffixListTests {
    @Test("Debian's list is read, with wildcards, exceptions and internationalized rules")
    func systemList() {
        let list = PublicSuffixList.system
        #expect(list.ruleCount > 5000, "is the publicsuffix package installed? (make deps)")
        #expect(list.isPublicSuffix("com"))
        #expect(list.isPublicSuffix("co.uk"))
        #expect(!list.isPublicSuffix("example.co.uk"))
        #expect(list.registrableDomain(of: "a.b.example.co.uk") == "example.co.uk")
        #expect(list.registrableDomain(of: "co.uk") == nil)
        // *.ck with !www.ck
        #expect(list.isPublicSuffix("anything.ck"))
        #expect(!list.isPublicSuffix("www.ck"))
        #expect(list.publicSuffix(of: "www.ck") == "ck")
        // рф, as hosts arrive: punycode.
        #expect(list.isPublicSuffix("xn--p1ai"))
        // An unknown TLD: the default rule.
        #expect(list.isPublicSuffix("unknowntld"))
        #expect(list.registrableDomain(of: "host.unknowntld") == "host.unknowntld")
    }

    @Test("Rules in list text; punycode encoding (RFC 3492 samples)")
    func customRules() {
        let list = PublicSuffixList(rules: "// comment\nexample\n*.wild.example\n!keep.wild.example\n食狮.中国\n")
        #expect(list.isPublicSuffix("example"))
        #expect(list.isPublicSuffix("x.wild.example"))
        #expect(!list.isPublicSuffix("keep.wild.example"))
        #expect(list.registrableDomain(of: "a.keep.wild.example") == "keep.wild.example")
        #expect(list.isPublicSuffix("xn--85x722f.xn--fiqs8s"))
        #expect(Punycode.encode("bücher") == "bcher-kva")
        #expect(Punycode.encode("中国") == "fiqs8s")
        #expect(Punycode.encode("食狮") == "85x722f")
    }
}
