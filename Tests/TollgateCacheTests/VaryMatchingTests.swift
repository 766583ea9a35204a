import Testing
import TollgateCache
import TollgateHTTP

@Suite("Vary matching: the negotiation fields normalized, nothing else merged", .timeLimit(.minutes(1)))
struct VaryMatchingTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var field: String
        var stored: String
        var request: String
        var matches: Bool

        var testDescription: String {
            "\(field): \"\(stored)\" \(matches ? "selects" : "does not select") \"\(request)\""
        }
    }

    static let cases: [Case] = [
        // Accept-Language: order, case, weight spelling, whitespace.
        Case(field: "Accept-Language", stored: "en, de", request: "de, en", matches: true),
        Case(field: "Accept-Language", stored: "en, de", request: "eN, De", matches: true),
        Case(field: "Accept-Language", stored: "en, de", request: " en ,   de", matches: true),
        Case(field: "Accept-Language", stored: "en;q=0.50, de", request: "de;q=1.000, EN;Q=0.5", matches: true),
        Case(field: "Accept-Language", stored: "en, de;q=0.5", request: "en;q=0.5, de", matches: false),
        Case(field: "Accept-Language", stored: "en", request: "en-GB", matches: false),
        Case(field: "Accept-Language", stored: "en, de", request: "en", matches: false),
        Case(field: "Accept-Language", stored: "en;q=0", request: "en", matches: false),
        // A malformed weight has no canonical form: only the same text matches.
        Case(field: "Accept-Language", stored: "en;q=2", request: "en;q=2", matches: true),
        Case(field: "Accept-Language", stored: "en;q=2", request: "EN;q=2", matches: false),
        Case(field: "Accept-Language", stored: "en;x=1", request: "EN;x=1", matches: false),
        // Accept-Encoding.
        Case(field: "Accept-Encoding", stored: "gzip, br", request: "BR,gzip", matches: true),
        Case(field: "Accept-Encoding", stored: "gzip, identity;q=0", request: "identity;q=0.000, gzip", matches: true),
        Case(field: "Accept-Encoding", stored: "gzip", request: "gzip, br", matches: false),
        Case(field: "Accept-Encoding", stored: "gzip;q=0", request: "gzip", matches: false),
        // Accept: type case, parameter order and quoting, charset case; other values keep their case.
        Case(
            field: "Accept",
            stored: "text/html;level=1, application/json",
            request: "Application/JSON, text/html; level=1",
            matches: true
        ),
        Case(field: "Accept", stored: "text/html;a=1;b=2", request: "text/html;B=2;a=\"1\"", matches: true),
        Case(field: "Accept", stored: "text/html;charset=UTF-8", request: "text/html;charset=\"utf-8\"", matches: true),
        Case(field: "Accept", stored: "text/html;a=B", request: "text/html;a=b", matches: false),
        Case(field: "Accept", stored: "text/html;q=0.5", request: "text/html;q=0.8", matches: false),
        Case(field: "Accept", stored: "text/*, */*;q=0.1", request: "*/*;q=0.1, TEXT/*", matches: true),
        Case(field: "Accept", stored: "text/html", request: "text/html;level=1", matches: false),
        // A parameter after the weight is not canonicalized (RFC 9110 dropped accept-ext).
        Case(field: "Accept", stored: "text/html;q=0.5;a=1", request: "TEXT/html;q=0.5;a=1", matches: false),
        // Fields whose semantics the cache does not know compare exactly (after whitespace).
        Case(field: "Foo", stored: "a, b", request: "b, a", matches: false),
        Case(field: "Foo", stored: "A", request: "a", matches: false),
        Case(field: "Foo", stored: "1,2", request: " 1, 2 ", matches: true),
    ]

    @Test("A request selects the stored variant exactly when its value means the same", arguments: cases)
    func matching(_ c: Case) {
        let vary = Vary(fieldValues: [c.field])
        let recorded = VaryMatching.varyingFields(of: vary, in: HeaderFields([(c.field, c.stored)]))
        let request = HeaderFields([(c.field, c.request)])
        #expect(VaryMatching.matches(vary: vary, recorded: recorded, request: request) == c.matches)
    }

    @Test("An absent field selects only a variant stored without it")
    func absence() {
        let vary = Vary(fieldValues: ["Accept-Language"])
        let without = VaryMatching.varyingFields(of: vary, in: HeaderFields())
        #expect(VaryMatching.matches(vary: vary, recorded: without, request: HeaderFields()))
        #expect(
            !VaryMatching.matches(vary: vary, recorded: without, request: HeaderFields([("Accept-Language", "en")]))
        )
        let with = VaryMatching.varyingFields(of: vary, in: HeaderFields([("Accept-Language", "en")]))
        #expect(!VaryMatching.matches(vary: vary, recorded: with, request: HeaderFields()))
    }

    @Test("X-Forwarded-Host is varied on whatever Vary says when the stored request carried it; a response stored without it is anyone's")
    func forwardedHostAlwaysVaried() {
        func fields(_ host: String?, language: String? = nil) -> HeaderFields {
            var fields = HeaderFields()
            if let host { fields.add(name: "X-Forwarded-Host", value: host) }
            if let language { fields.add(name: "Accept-Language", value: language) }
            return fields
        }
        for vary in [Vary(fieldValues: []), Vary(fieldValues: ["Accept-Language"])] {
            let recorded = VaryMatching.varyingFields(of: vary, in: fields("shop.example", language: "en"))
            #expect(recorded.contains(VaryingField(name: "x-forwarded-host", value: "shop.example")))
            #expect(VaryMatching.matches(vary: vary, recorded: recorded, request: fields("shop.example", language: "en")))
            #expect(!VaryMatching.matches(vary: vary, recorded: recorded, request: fields("evil.example", language: "en")))
            #expect(!VaryMatching.matches(vary: vary, recorded: recorded, request: fields(nil, language: "en")))
            // Recorded without it (a forward proxy's request, a warm's): the origin could not
            // have built the answer from it, so any request selects it.
            let plain = VaryMatching.varyingFields(of: vary, in: fields(nil, language: "en"))
            #expect(!plain.contains { $0.name == "x-forwarded-host" })
            #expect(VaryMatching.matches(vary: vary, recorded: plain, request: fields(nil, language: "en")))
            #expect(VaryMatching.matches(vary: vary, recorded: plain, request: fields("shop.example", language: "en")))
            #expect(VaryMatching.matches(vary: vary, recorded: plain, request: fields("shop.example", language: "de")) == vary.isEmpty)
        }
        // A Vary that names it is recorded once.
        let named = Vary(fieldValues: ["X-Forwarded-Host"])
        #expect(VaryMatching.varyingFields(of: named, in: fields("a.example")).count == 1)
    }
}
