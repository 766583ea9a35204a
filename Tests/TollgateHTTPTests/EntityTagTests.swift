import Testing
import TollgateHTTP

@Suite("Entity tags (RFC 9110 §8.8.3, §13.1.1–2)")
struct EntityTagTests {
    @Test(
        "Strong and weak comparison follow the table of RFC 9110 §8.8.3.2",
        arguments: [
            ("W/\"1\"", "W/\"1\"", false, true),
            ("W/\"1\"", "W/\"2\"", false, false),
            ("W/\"1\"", "\"1\"", false, true),
            ("\"1\"", "\"1\"", true, true),
            ("\"1\"", "\"2\"", false, false),
        ])
    func comparisonTable(_ a: String, _ b: String, strong: Bool, weak: Bool) throws {
        let lhs = try #require(EntityTag(a))
        let rhs = try #require(EntityTag(b))
        #expect(lhs.matches(rhs, using: .strong) == strong)
        #expect(lhs.matches(rhs, using: .weak) == weak)
        // Both comparisons are symmetric.
        #expect(rhs.matches(lhs, using: .strong) == strong)
        #expect(rhs.matches(lhs, using: .weak) == weak)
    }

    @Test(
        "Valid entity tags parse to their weak flag and opaque tag and print back",
        arguments: [
            ("\"xyzzy\"", false, "xyzzy", "\"xyzzy\""),
            ("W/\"xyzzy\"", true, "xyzzy", "W/\"xyzzy\""),
            ("\"\"", false, "", "\"\""),
            ("  \"a\"\t", false, "a", "\"a\""),
            ("\"a,b\"", false, "a,b", "\"a,b\""),
            ("\"a\\\"", false, "a\\", "\"a\\\""),  // a backslash is a plain etagc, not an escape
            ("\"é\"", false, "é", "\"é\""),  // obs-text
        ])
    func parsing(_ text: String, weak: Bool, opaque: String, printed: String) throws {
        let tag = try #require(EntityTag(text))
        #expect(tag.isWeak == weak)
        #expect(tag.opaqueTag == opaque)
        #expect(tag.description == printed)
        #expect(EntityTag(tag.description) == tag)
    }

    @Test(
        "Malformed entity tags give nil",
        arguments: [
            "xyzzy",  // unquoted
            "w/\"x\"",  // W/ is case-sensitive
            "W/ \"x\"",
            "W/",
            "\"x",
            "\"x\"y",
            "\"x\" \"y\"",
            "\"a b\"",  // space is not an etagc
            "\"a\u{7F}\"",
            "*",
            "",
        ])
    func malformed(_ text: String) {
        #expect(EntityTag(text) == nil)
    }

    @Test(
        "An opaque tag is accepted only if every byte is an etagc",
        arguments: [("abc", true), ("", true), ("a\"b", false), ("a b", false), ("tab\t", false), ("ü", true)])
    func opaqueTagValidation(_ opaque: String, valid: Bool) {
        #expect((EntityTag(opaqueTag: opaque) != nil) == valid)
        #expect(EntityTag(opaqueTag: opaque, isWeak: true).map(\.isWeak) == (valid ? true : nil))
    }

    @Test("Equality and hashing compare bytes, not canonically equivalent Unicode")
    func byteEquality() throws {
        let composed = try #require(EntityTag(opaqueTag: "\u{E9}"))
        let decomposed = try #require(EntityTag(opaqueTag: "e\u{301}"))
        #expect(composed != decomposed)
        #expect(!composed.matches(decomposed, using: .weak))
        #expect(Set([composed, decomposed]).count == 2)
        #expect(EntityTag(opaqueTag: "x", isWeak: true) != EntityTag(opaqueTag: "x"))
    }

    @Test(
        "If-Match / If-None-Match lists parse `*`, tags across lines, and commas inside tags",
        arguments: [
            (["*"], "*"),
            ([" * "], "*"),
            (["\"a\", W/\"b\""], "\"a\", W/\"b\""),
            (["\"a\"", "\"b\""], "\"a\", \"b\""),
            (["\"a,b\", \"c\""], "\"a,b\", \"c\""),
            ([" , \"a\" ,, "], "\"a\""),
            ([""], ""),
            ([], ""),
        ])
    func listParsing(_ values: [String], printed: String) throws {
        let list = try #require(EntityTagList(fieldValues: values))
        #expect(list.description == printed)
    }

    @Test(
        "Malformed lists, and `*` mixed with tags, give nil",
        arguments: [["*, \"a\""], ["\"a\"", "*"], ["\"a\", b"], ["\"a\" \"b\""], ["\"a"], ["**"], ["W/"]])
    func listMalformed(_ values: [String]) {
        #expect(EntityTagList(fieldValues: values) == nil)
    }

    @Test(
        "List matching: strong for If-Match, weak for If-None-Match, `*` matches any",
        arguments: [
            ("\"1\", \"2\"", "\"2\"", EntityTag.Comparison.strong, true),
            ("\"1\"", "W/\"1\"", .strong, false),
            ("W/\"1\"", "\"1\"", .strong, false),
            ("W/\"1\"", "\"1\"", .weak, true),
            ("\"1\"", "W/\"1\"", .weak, true),
            ("\"1\"", "\"2\"", .weak, false),
            ("*", "W/\"9\"", .strong, true),
            ("", "\"1\"", .weak, false),
        ])
    func listMatching(_ list: String, _ current: String, _ comparison: EntityTag.Comparison, matches: Bool) throws {
        let parsed = try #require(EntityTagList(fieldValues: [list]))
        #expect(parsed.matches(EntityTag(current), using: comparison) == matches)
    }

    @Test("A representation without an entity tag matches only `*`")
    func listMatchingWithoutTag() throws {
        #expect(try #require(EntityTagList(fieldValues: ["*"])).matches(nil, using: .weak))
        #expect(!(try #require(EntityTagList(fieldValues: ["\"1\""])).matches(nil, using: .weak)))
    }
}
