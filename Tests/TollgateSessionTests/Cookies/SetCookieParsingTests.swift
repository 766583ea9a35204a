import Foundation
import Testing
import TollgateHTTP

@testable import TollgateSession

@Suite("Set-Cookie parsing (RFC 6265 §5.2, §5.3)", .timeLimit(.minutes(1)))
struct SetCookieParsingTests {
    static let now = Date(timeIntervalSince1970: 1_700_000_000)
    static let url = HTTPURL(string: "https://www.example.com/shop/cart/view")!

    static func parse(_ field: String, _ url: HTTPURL = url) -> Result<Cookie, CookieRefusal> {
        Cookie.parse(setCookie: field, from: url, now: now, publicSuffixes: .system)
    }

    static func cookie(_ field: String, _ url: HTTPURL = url) throws -> Cookie {
        try parse(field, url).get()
    }

    @Test("Name and value are trimmed; attributes are case-insensitive; defaults: host-only, default path, session")
    func basics() throws {
        let cookie = try Self.cookie("  SID = 31d4d96e407aad42 ; sEcUrE ; HTTPONLY")
        #expect(cookie.name == "SID")
        #expect(cookie.value == "31d4d96e407aad42")
        #expect(cookie.domain == "www.example.com")
        #expect(cookie.isHostOnly)
        #expect(cookie.path == "/shop/cart")
        #expect(cookie.isSecure && cookie.isHTTPOnly)
        #expect(cookie.isSessionOnly)
        #expect(cookie.sameSite == nil)
        #expect(try Self.cookie("a=b=c").value == "b=c")
        #expect(try Self.cookie("empty=").value == "")
        #expect(try Self.cookie("q=\"quoted\"").value == "\"quoted\"")
    }

    @Test("Not cookies: no '=', an empty name, control characters; too large")
    func malformed() {
        #expect(Self.parse("novalue") == .failure(.malformed))
        #expect(Self.parse("=value") == .failure(.malformed))
        #expect(Self.parse("a=b\u{1}c") == .failure(.malformed))
        #expect(Self.parse("a" + "=" + String(repeating: "x", count: 4096)) == .failure(.tooLarge))
    }

    @Test(
        "Expires in the formats servers send (the cookie-date algorithm)",
        arguments: [
            "Wed, 09 Jun 2021 10:18:14 GMT",
            "Wednesday, 09-Jun-21 10:18:14 GMT",
            "Wed Jun  9 10:18:14 2021",
            "09 Jun 2021 10:18:14",
            "Wed, 09-Jun-2021 10:18:14 GMT",
            "10:18:14 9 june 2021",
        ]
    )
    func expiresFormats(text: String) throws {
        let cookie = try Self.cookie("a=b; Expires=\(text)")
        #expect(cookie.expiresDate == Date(timeIntervalSince1970: 1_623_233_894))
    }

    @Test(
        "Unreadable Expires dates are ignored (a session cookie)",
        arguments: [
            "soon", "Wed, 32 Jun 2021 10:18:14 GMT", "Wed, 09 Jun 1600 10:18:14 GMT", "31 Feb 2021 00:00:00",
            "09 Jun 2021 24:00:00",
        ]
    )
    func badExpires(text: String) throws {
        #expect(try Self.cookie("a=b; Expires=\(text)").isSessionOnly)
    }

    @Test("Max-Age wins over Expires whatever their order; 0 or negative is already expired; junk is ignored")
    func maxAge() throws {
        #expect(
            try Self.cookie("a=b; Max-Age=60; Expires=Wed, 09 Jun 2021 10:18:14 GMT").expiresDate
                == Self.now.addingTimeInterval(60)
        )
        #expect(
            try Self.cookie("a=b; Expires=Wed, 09 Jun 2021 10:18:14 GMT; Max-Age=60").expiresDate
                == Self.now.addingTimeInterval(60)
        )
        #expect(try Self.cookie("a=b; Max-Age=0").isExpired(at: Self.now))
        #expect(try Self.cookie("a=b; Max-Age=-5").isExpired(at: Self.now))
        #expect(try Self.cookie("a=b; Max-Age=1e3").isSessionOnly)
        #expect(try Self.cookie("a=b; Max-Age=+5").isSessionOnly)
        #expect(try Self.cookie("a=b; Max-Age=10; Max-Age=20").expiresDate == Self.now.addingTimeInterval(20))
    }

    @Test("Domain: a leading dot is dropped and case folded; it must domain-match the host")
    func domainAttribute() throws {
        let cookie = try Self.cookie("a=b; Domain=.EXAMPLE.com")
        #expect(cookie.domain == "example.com")
        #expect(!cookie.isHostOnly)
        #expect(try Self.cookie("a=b; Domain=www.example.com").isHostOnly == false)
        #expect(Self.parse("a=b; Domain=other.com") == .failure(.domainMismatch))
        #expect(Self.parse("a=b; Domain=ple.com") == .failure(.domainMismatch))
        #expect(Self.parse("a=b; Domain=shop.www.example.com") == .failure(.domainMismatch))
        #expect(try Self.cookie("a=b; Domain=").isHostOnly)  // empty: ignored
        let ip = HTTPURL(string: "http://192.168.1.10/x")!
        #expect(try Self.cookie("a=b; Domain=192.168.1.10", ip).isHostOnly)
        #expect(Self.parse("a=b; Domain=168.1.10", ip) == .failure(.domainMismatch))
    }

    @Test("A public suffix as Domain is refused, unless it is the host itself (then host-only)")
    func publicSuffixRefused() throws {
        #expect(Self.parse("a=b; Domain=com") == .failure(.publicSuffix))
        let uk = HTTPURL(string: "https://shop.example.co.uk/")!
        #expect(Self.parse("a=b; Domain=co.uk", uk) == .failure(.publicSuffix))
        #expect(Self.parse("a=b; Domain=.uk", uk) == .failure(.publicSuffix))
        #expect(try Self.cookie("a=b; Domain=example.co.uk", uk).domain == "example.co.uk")
        // The list's private section: github.io hosts are separate sites.
        let pages = HTTPURL(string: "https://alice.github.io/")!
        #expect(Self.parse("a=b; Domain=github.io", pages) == .failure(.publicSuffix))
        // Setting it for itself makes a host-only cookie.
        let suffixHost = HTTPURL(string: "https://github.io/")!
        let own = try Self.cookie("a=b; Domain=github.io", suffixHost)
        #expect(own.isHostOnly && own.domain == "github.io")
    }

    @Test("Path: given when it starts with '/', otherwise the default path of the URL")
    func pathAttribute() throws {
        #expect(try Self.cookie("a=b; Path=/").path == "/")
        #expect(try Self.cookie("a=b; Path=/other/place").path == "/other/place")
        #expect(try Self.cookie("a=b; Path=relative").path == "/shop/cart")
        #expect(try Self.cookie("a=b; Path=").path == "/shop/cart")
        #expect(Cookie.defaultPath(of: "/") == "/")
        #expect(Cookie.defaultPath(of: "/file") == "/")
        #expect(Cookie.defaultPath(of: "/dir/") == "/dir")
        #expect(Cookie.defaultPath(of: "") == "/")
    }

    @Test("SameSite is kept (Strict, Lax, None; other values dropped)")
    func sameSite() throws {
        #expect(try Self.cookie("a=b; SameSite=strict").sameSite == .strict)
        #expect(try Self.cookie("a=b; SameSite=Lax").sameSite == .lax)
        #expect(try Self.cookie("a=b; SameSite=None; Secure").sameSite == Cookie.SameSite.none)
        #expect(try Self.cookie("a=b; SameSite=bogus").sameSite == nil)
    }

    @Test("Secure cookies and __Secure-/__Host- names only from https; __Host- needs Path=/ and no Domain")
    func secureOrigins() throws {
        let http = HTTPURL(string: "http://www.example.com/")!
        #expect(Self.parse("a=b; Secure", http) == .failure(.insecureOrigin))
        #expect(Self.parse("__Secure-a=b; Secure", http) == .failure(.insecureOrigin))
        #expect(Self.parse("__Secure-a=b") == .failure(.insecureOrigin))
        #expect(try Self.cookie("__Secure-a=b; Secure").isSecure)
        #expect(try Self.cookie("__Host-a=b; Secure; Path=/").isHostOnly)
        #expect(Self.parse("__Host-a=b; Secure") == .failure(.hostPrefix))
        #expect(Self.parse("__Host-a=b; Secure; Path=/; Domain=example.com") == .failure(.hostPrefix))
    }
}
