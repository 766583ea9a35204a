import Testing
import TollgateHTTP

@Suite("List fields, Vary and Connection (RFC 9110 §5.6.1, §12.5.5, §7.6.1)")
struct FieldListTests {
    @Test(
        "List elements split at commas outside quoted strings, trimmed, empty ones dropped",
        arguments: [
            ("a, b,c", ["a", "b", "c"]),
            ("a=\"x, y\", b", ["a=\"x, y\"", "b"]),
            ("a=\"x\\\", y\", b", ["a=\"x\\\", y\"", "b"]),  // an escaped quote does not end the string
            ("a=\"x\\\\\", b", ["a=\"x\\\\\"", "b"]),  // an escaped backslash does not escape the quote
            (" , ,a,, ", ["a"]),
            ("\ta\t,\tb", ["a", "b"]),
            ("a=\"unterminated, b", ["a=\"unterminated, b"]),
            ("", []),
            (",", []),
        ])
    func elements(_ value: String, expected: [String]) {
        #expect(FieldList.elements(value).map(String.init) == expected)
    }

    @Test("Token bytes are exactly tchar (RFC 9110 §5.6.2): letters, digits and !#$%&'*+-.^_`|~")
    func tokenBytes() {
        let punctuation = Set("!#$%&'*+-.^_`|~".utf8)
        for value in 0...255 {
            let byte = UInt8(value)
            let isLetterOrDigit = (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
            #expect(FieldList.isTokenByte(byte) == (isLetterOrDigit || punctuation.contains(byte)), "byte \(value)")
        }
    }

    @Test("Several field lines give the elements of each in order")
    func elementsOfSeveralLines() {
        #expect(FieldList.elements(["a, b", "", "c"]).map(String.init) == ["a", "b", "c"])
    }

    @Test(
        "Tokens are non-empty runs of tchar",
        arguments: [
            ("max-age", true), ("!#$%&'*+-.^_`|~09azAZ", true), ("", false), ("a b", false), ("a,b", false),
            ("a=b", false), ("\"a\"", false), ("a/b", false), ("é", false),
        ])
    func tokens(_ s: String, isToken: Bool) {
        #expect(FieldList.isToken(s) == isToken)
    }

    @Test(
        "Quoted strings unquote with backslash escapes; anything else is nil",
        arguments: [
            ("\"abc\"", "abc"), ("\"a\\\"b\"", "a\"b"), ("\"a\\\\b\"", "a\\b"), ("\"\\x\"", "x"), ("\"\"", ""),
            ("\"a, b\"", "a, b"), ("\"abc", nil), ("abc", nil), ("\"a\"b", nil), ("\"a\\\"", nil), ("\"", nil),
        ] as [(String, String?)])
    func unquote(_ s: String, expected: String?) {
        #expect(FieldList.unquote(s[...]) == expected)
    }

    @Test(
        "Values are quoted only when they are not tokens, with quotes and backslashes escaped",
        arguments: [("abc", "abc"), ("a b", "\"a b\""), ("a\"b", "\"a\\\"b\""), ("a\\b", "\"a\\\\b\""), ("", "\"\"")])
    func quoting(_ s: String, expected: String) {
        #expect(FieldList.quotedIfNeeded(s) == expected)
        #expect(FieldList.unquote(FieldList.quoted(s)[...]) == s)
    }

    @Test(
        "Vary: names are lowercased and de-duplicated, and `*` is detected",
        arguments: [
            (["Accept-Encoding"], false, ["accept-encoding"]),
            (["Accept-Encoding, accept-encoding, User-Agent"], false, ["accept-encoding", "user-agent"]),
            (["Accept", "Cookie"], false, ["accept", "cookie"]),
            (["*"], true, []),
            (["accept, *"], true, ["accept"]),
            (["accept", " * "], true, ["accept"]),
            (["bad name, ok"], false, ["ok"]),
            ([""], false, []),
            ([" , "], false, []),
            ([], false, []),
        ])
    func vary(_ values: [String], wildcard: Bool, names: [String]) {
        let vary = Vary(fieldValues: values)
        #expect(vary.isWildcard == wildcard)
        #expect(vary.fieldNames == names)
        #expect(vary.isEmpty == (!wildcard && names.isEmpty))
    }

    @Test("Vary prints `*` alone, or its names")
    func varyDescription() {
        #expect(Vary(fieldValues: ["accept, *"]).description == "*")
        #expect(Vary(fieldValues: ["Accept, Accept-Language"]).description == "accept, accept-language")
        #expect(Vary(fieldNames: ["Accept", "ACCEPT"]) == Vary(fieldValues: ["accept"]))
    }

    @Test(
        "Connection: option tokens are lowercased and looked up case-insensitively",
        arguments: [
            (["close"], ["close"], true, false, false),
            (["Keep-Alive, Upgrade"], ["keep-alive", "upgrade"], false, true, true),
            (["X-Foo, x-foo", "CLOSE"], ["x-foo", "close"], true, false, false),
            ([""], [], false, false, false),
        ])
    func connection(_ values: [String], options: [String], close: Bool, keepAlive: Bool, upgrade: Bool) {
        let connection = ConnectionOptions(fieldValues: values)
        #expect(connection.options == options)
        #expect(connection.close == close)
        #expect(connection.keepAlive == keepAlive)
        #expect(connection.upgrade == upgrade)
        for option in options { #expect(connection.contains(option.uppercased())) }
    }

    @Test(
        "A directive prints as name or name=value, quoting a value that is not a token",
        arguments: [
            (FieldDirective(name: "No-Cache"), "no-cache"), (FieldDirective(name: "a", value: "b"), "a=b"),
            (FieldDirective(name: "a", value: "b c"), "a=\"b c\""),
        ])
    func directiveDescription(_ directive: FieldDirective, expected: String) {
        #expect(directive.description == expected)
    }
}
