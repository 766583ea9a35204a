import Foundation
import Testing
import TollgateHTTP
import TollgateSession

/// Set-Cookie values that FuzzCookie (Fuzz/, `make fuzz`) found mishandled.
@Suite("Set-Cookie values found by fuzzing")
struct CookieFuzzFindingsTests {
    static let origin = HTTPURL(string: "https://www.example.com/a/b")!
    static let suffixes = PublicSuffixList(rules: "com\n")

    /// Before the fix the field was split at Characters: `;` and a combining mark after it
    /// (U+035E) are one Character, so no split happened there and the value kept the `;` (sent
    /// back to the origin, whose byte parser reads a second cookie in it).
    @Test("A `;` followed by a combining mark still ends the value")
    func semicolonBeforeACombiningMark() throws {
        let field = "id=1;\u{35E} injected=2; Path=/"
        let cookie = try Cookie.parse(setCookie: field, from: Self.origin, publicSuffixes: Self.suffixes).get()
        #expect(cookie.value == "1")
        #expect(cookie.path == "/")
    }

    @Test("An `=` followed by a combining mark still separates an attribute's name from its value")
    func equalsBeforeACombiningMark() throws {
        let field = "id=\u{301}x; Path=\u{301}"
        let cookie = try Cookie.parse(setCookie: field, from: Self.origin, publicSuffixes: Self.suffixes).get()
        #expect(cookie.name == "id")
        #expect(cookie.value == "\u{301}x")
        #expect(cookie.path == "/a")  // a Path not starting with `/` is ignored: the default path
    }
}
