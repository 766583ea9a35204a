import Testing
import TollgateHTTP

@Suite("Cache-Control and Pragma (RFC 9111 §5.2, §5.4)")
struct CacheControlTests {
    typealias CC = CacheControl

    @Test(
        "Every request and response directive parses to its property",
        arguments: [
            ("max-age=60", CC(maxAge: 60)),
            ("s-maxage=30", CC(sMaxAge: 30)),
            ("max-stale", CC(maxStale: .any)),
            ("max-stale=10", CC(maxStale: .seconds(10))),
            ("min-fresh=5", CC(minFresh: 5)),
            ("no-cache", CC(noCache: .all)),
            ("no-cache=\"Set-Cookie, X-Foo\"", CC(noCache: .listed(["set-cookie", "x-foo"]))),
            ("no-cache=Set-Cookie", CC(noCache: .listed(["set-cookie"]))),  // token form accepted
            ("no-store", CC(noStore: true)),
            ("no-transform", CC(noTransform: true)),
            ("only-if-cached", CC(onlyIfCached: true)),
            ("must-revalidate", CC(mustRevalidate: true)),
            ("proxy-revalidate", CC(proxyRevalidate: true)),
            ("must-understand", CC(mustUnderstand: true)),
            ("private", CC(private: .all)),
            ("private=\"Authorization\"", CC(private: .listed(["authorization"]))),
            ("public", CC(public: true)),
            ("immutable", CC(immutable: true)),
            ("stale-while-revalidate=30", CC(staleWhileRevalidate: 30)),
            ("stale-if-error=600", CC(staleIfError: 600)),
            ("community=\"UCI\"", CC(extensions: [FieldDirective(name: "community", value: "UCI")])),
            ("x-bare", CC(extensions: [FieldDirective(name: "x-bare")])),
            ("public, max-age=3600, immutable", CC(maxAge: 3600, public: true, immutable: true)),
            ("no-store, must-understand", CC(noStore: true, mustUnderstand: true)),
            ("", CC()),
        ])
    func directives(_ value: String, expected: CacheControl) {
        #expect(CacheControl(value) == expected)
    }

    @Test(
        "Directive names are case-insensitive; extension names are kept lowercased",
        arguments: [
            ("MAX-AGE=5, No-Store, PRIVATE", CC(maxAge: 5, noStore: true, private: .all)),
            ("Max-Stale, S-MaxAge=7", CC(sMaxAge: 7, maxStale: .any)),
            ("X-Custom=Value", CC(extensions: [FieldDirective(name: "x-custom", value: "Value")])),
        ])
    func caseInsensitive(_ value: String, expected: CacheControl) {
        #expect(CacheControl(value) == expected)
    }

    @Test(
        "Whitespace, empty list elements and several field lines are tolerated",
        arguments: [
            (["  max-age = 5 ,\tpublic  "], CC(maxAge: 5, public: true)),
            ([", , max-age=5,,public,"], CC(maxAge: 5, public: true)),
            (["max-age=5", "public"], CC(maxAge: 5, public: true)),
            (["", " ", ","], CC()),
            ([], CC()),
        ])
    func whitespaceAndEmptyElements(_ values: [String], expected: CacheControl) {
        #expect(CacheControl(fieldValues: values) == expected)
    }

    @Test(
        "Quoted arguments may hold commas, equals signs and backslash escapes",
        arguments: [
            ("private=\"a, b\", max-age=5", CC(maxAge: 5, private: .listed(["a", "b"]))),
            ("x=\"p, q=r\", public", CC(public: true, extensions: [FieldDirective(name: "x", value: "p, q=r")])),
            ("x=\"a\\\"b, c\", max-age=1", CC(maxAge: 1, extensions: [FieldDirective(name: "x", value: "a\"b, c")])),
            ("x=\"back\\\\slash\"", CC(extensions: [FieldDirective(name: "x", value: "back\\slash")])),
            ("max-age=\"60\"", CC(maxAge: 60)),  // quoted delta-seconds accepted (§5.2)
            ("s-maxage=\"10\", stale-if-error=\"5\"", CC(sMaxAge: 10, staleIfError: 5)),
        ])
    func quotedArguments(_ value: String, expected: CacheControl) {
        #expect(CacheControl(value) == expected)
    }

    @Test(
        "Repeated directives keep the most restrictive value",
        arguments: [
            (["max-age=60, max-age=120"], CC(maxAge: 0)),  // disagreeing repeats: stale (§4.2.1)
            (["max-age=60", "max-age=30"], CC(maxAge: 0)),
            (["max-age=60, max-age=60"], CC(maxAge: 60)),  // agreeing repeats change nothing
            (["s-maxage=10, s-maxage=20"], CC(sMaxAge: 0)),
            (["min-fresh=10, min-fresh=20"], CC(minFresh: 20)),
            (["min-fresh=20, min-fresh=10"], CC(minFresh: 20)),
            (["max-stale=10, max-stale=5"], CC(maxStale: .seconds(5))),
            (["max-stale, max-stale=5"], CC(maxStale: .seconds(5))),
            (["max-stale=5, max-stale"], CC(maxStale: .seconds(5))),
            (["max-stale, max-stale"], CC(maxStale: .any)),
            (["stale-while-revalidate=30, stale-while-revalidate=10"], CC(staleWhileRevalidate: 10)),
            (["stale-if-error=30, stale-if-error=60"], CC(staleIfError: 30)),
            (["no-cache=\"a\", no-cache"], CC(noCache: .all)),
            (["no-cache, no-cache=\"a\""], CC(noCache: .all)),
            (["private=\"a\", private=\"B, a\""], CC(private: .listed(["a", "b"]))),
            (["no-store, no-store"], CC(noStore: true)),
        ])
    func duplicates(_ values: [String], expected: CacheControl) {
        #expect(CacheControl(fieldValues: values) == expected)
    }

    @Test(
        "Invalid arguments take the most restrictive reading",
        arguments: [
            ("max-age=abc", CC(maxAge: 0)),  // invalid freshness: stale (§4.2.1)
            ("max-age=-1", CC(maxAge: 0)),
            ("max-age=+5", CC(maxAge: 0)),
            ("max-age=1.5", CC(maxAge: 0)),
            ("max-age=", CC(maxAge: 0)),
            ("max-age", CC(maxAge: 0)),
            ("max-age=\" 60\"", CC(maxAge: 0)),
            ("max-age=\"60", CC(maxAge: 0)),  // unterminated quoted-string
            ("max-age=abc, max-age=60", CC(maxAge: 0)),
            ("s-maxage=x", CC(sMaxAge: 0)),
            // Demand more freshness than any response has.
            ("min-fresh=x", CC(minFresh: CacheControl.maximumDeltaSeconds)),
            ("max-stale=x", CC(maxStale: .seconds(0))),
            ("stale-while-revalidate", CC(staleWhileRevalidate: 0)),
            ("stale-if-error=soon", CC(staleIfError: 0)),
            ("no-cache=\"\"", CC(noCache: .all)),  // a list naming nothing applies to everything
            ("private=\"a b\"", CC(private: .all)),  // not a field name
            ("private=\"a, b c\"", CC(private: .all)),  // one bad name spoils the list
            ("no-cache=\"a, *\"", CC(noCache: .all)),
            ("private=\"a", CC(private: .all)),
            ("no-store=yes", CC(noStore: true)),  // restrictive flags hold despite an argument
            ("must-revalidate=1", CC(mustRevalidate: true)),
            ("public=yes", CC()),  // relaxing flags are dropped when given an argument
            ("immutable=1", CC()),
            ("must-understand=1", CC()),
            ("max age=5", CC()),  // a name that is not a token is dropped
            ("\"max-age\"=5", CC()),
        ])
    func invalidArguments(_ value: String, expected: CacheControl) {
        #expect(CacheControl(value) == expected)
    }

    @Test(
        "delta-seconds above 2^31 saturate to 2^31 (RFC 9111 §1.2.2)",
        arguments: [
            ("max-age=2147483647", 2_147_483_647),
            ("max-age=2147483648", 2_147_483_648),
            ("max-age=2147483649", 2_147_483_648),
            ("max-age=99999999999999999999999999999999", 2_147_483_648),
            ("max-age=0000000060", 60),
        ])
    func saturation(_ value: String, expected: Int) {
        #expect(CacheControl(value).maxAge == expected)
        #expect(CacheControl(value.replacingMaxAge(with: "min-fresh")).minFresh == expected)
        #expect(CacheControl(value.replacingMaxAge(with: "s-maxage")).sMaxAge == expected)
    }

    @Test(
        "The description serializes every directive and parses back to the same value",
        arguments: [
            (
                CC(
                    maxAge: 1, sMaxAge: 2, maxStale: .seconds(3), minFresh: 4, noCache: .listed(["a", "b"]),
                    noStore: true, noTransform: true, onlyIfCached: true, mustRevalidate: true,
                    proxyRevalidate: true, mustUnderstand: true, private: .all, public: true, immutable: true,
                    staleWhileRevalidate: 5, staleIfError: 6,
                    extensions: [FieldDirective(name: "x", value: "a \"q\""), FieldDirective(name: "y")]),
                "max-age=1, s-maxage=2, max-stale=3, min-fresh=4, no-cache=\"a, b\", no-store, no-transform, "
                    + "only-if-cached, must-revalidate, proxy-revalidate, must-understand, private, public, immutable, "
                    + "stale-while-revalidate=5, stale-if-error=6, x=\"a \\\"q\\\"\", y"
            ),
            (
                CC(maxStale: .any, noCache: .all, private: .listed(["set-cookie"])),
                "max-stale, no-cache, private=\"set-cookie\""
            ),
            (CC(extensions: [FieldDirective(name: "e", value: "")]), "e=\"\""),
            (CC(), ""),
        ])
    func description(_ value: CacheControl, expected: String) {
        #expect(value.description == expected)
        #expect(CacheControl(value.description) == value)
    }

    @Test(
        "Parsed from a message's lines in place, it equals the parse of their values as strings",
        arguments: [
            [("Cache-Control", "no-store")],
            [("cache-control", "max-age=60, private=\"Set-Cookie, X-A\""), ("Vary", "x"), ("CACHE-CONTROL", "s-maxage=5")],
            [("Cache-Control", "max-age=60"), ("Cache-Control", "max-age=10")],  // a duplicated directive
            [("Cache-Control", "community=\"a,b=c\\\"d\", no-cache=\"X\"")],
            [("Cache-Control", "max-age=\"5\", max-age=abc")],
            [("Cache-Control", "")],
            [("Cache-Controls", "no-store"), ("X-Cache-Control", "no-store")],  // other names
            [],
        ])
    func linesInPlace(_ lines: [(String, String)]) {
        let fields = HeaderFields(lines)
        let byValues = CacheControl(fieldValues: fields.values(for: "Cache-Control"))
        #expect(CacheControl(cacheControlLinesOf: fields) == byValues, "\(lines)")
    }

    @Test("A backslash before a combining mark is escaped when written, so the value reads back whole (fuzz finding)")
    func backslashBeforeCombiningMark() {
        // U+05C7 combines with the backslash into one Character that is not "\\".
        let value = "ext=\"\\\\q\\\\\u{05C7}\""
        let parsed = CacheControl(value)
        #expect(CacheControl(parsed.description) == parsed, "\(value) → \(parsed.description)")
        #expect(FieldList.quoted("q\\\u{05C7}") == "\"q\\\\\u{05C7}\"")
        let found = "nI-che=\"Set-Co-kie[::1)d\", vate=\"a,t -so\"nore, imso=\"n[re, im\u{01}\0\0\0ble, ext=\"q\\\u{05C7}\""
        let reparsed = CacheControl(found)
        #expect(CacheControl(reparsed.description) == reparsed)
    }

    @Test(
        "Pragma: no-cache is detected among other pragma directives",
        arguments: [
            (["no-cache"], true, 0),
            (["No-Cache"], true, 0),
            (["foo=bar, no-cache"], true, 1),
            (["x", "no-cache"], true, 1),
            (["foo"], false, 1),
            ([], false, 0),
        ])
    func pragma(_ values: [String], noCache: Bool, extensionCount: Int) {
        let pragma = Pragma(fieldValues: values)
        #expect(pragma.noCache == noCache)
        #expect(pragma.extensions.count == extensionCount)
        #expect(Pragma(fieldValues: [pragma.description]) == pragma)
    }
}

extension String {
    fileprivate func replacingMaxAge(with name: String) -> String {
        name + dropFirst("max-age".count)
    }
}
