import Testing
import TollgateCache
import TollgateHTTP

@Suite("Storability (the willCacheResponse gate)", .timeLimit(.minutes(1)))
struct StorabilityTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var response: [String] = []
        var status = 200
        var request: [String] = []
        var method: HTTPMethod = .get
        var url = "https://example.com/a"
        var bodyLength: Int64? = 10
        var fromNetwork = true
        var policy: RequestCachePolicy = .protocol
        var sessionAllows = true
        var rules: CacheRules = .shared
        /// A rule's `force-ttl` applies.
        var forced = false
        var expected: Storability

        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "a plain 200 is stored", expected: .store(notes: [])),
        Case(name: "a non-HTTP scheme is not stored", url: "ftp://example.com/a", expected: .doNotStore(.scheme)),
        Case(
            name: "a POST response is not stored",
            response: ["Cache-Control: max-age=60"],
            method: .post,
            expected: .doNotStore(.method)
        ),
        Case(
            name: "a POST response with explicit freshness and its own URI as Content-Location is stored (RFC 9110 §9.3.3)",
            response: ["Cache-Control: max-age=60", "Content-Location: /a"],
            method: .post,
            expected: .store(notes: [])
        ),
        Case(
            name: "a POST response naming its URI absolutely, fresh by Expires, is stored",
            response: ["Expires: Thu, 01 Jan 2099 00:00:00 GMT", "Content-Location: https://example.com/a"],
            method: .post,
            expected: .store(notes: [])
        ),
        Case(
            name: "a POST response whose Content-Location is another URI is not stored",
            response: ["Cache-Control: max-age=60", "Content-Location: /b"],
            method: .post,
            expected: .doNotStore(.method)
        ),
        Case(
            name: "a POST response with its Content-Location but no explicit freshness is not stored",
            response: ["Content-Location: /a", "Last-Modified: Thu, 01 Jan 2015 00:00:00 GMT"],
            method: .post,
            expected: .doNotStore(.method)
        ),
        Case(
            name: "a POST response with two Content-Location lines is not stored",
            response: ["Cache-Control: max-age=60", "Content-Location: /a", "Content-Location: /b"],
            method: .post,
            expected: .doNotStore(.method)
        ),
        Case(
            name: "a 201 to a POST with its Content-Location is not stored",
            response: ["Cache-Control: max-age=60", "Content-Location: /a"],
            status: 201,
            method: .post,
            expected: .doNotStore(.method)
        ),
        Case(
            name: "a POST response with its Content-Location and no-store is not stored",
            response: ["Cache-Control: max-age=60, no-store", "Content-Location: /a"],
            method: .post,
            expected: .doNotStore(.noStore)
        ),
        Case(
            name: "a PUT response with its Content-Location is not stored",
            response: ["Cache-Control: max-age=60", "Content-Location: /a"],
            method: .put,
            expected: .doNotStore(.method)
        ),
        Case(name: "a HEAD response is not stored", method: .head, expected: .doNotStore(.method)),
        Case(
            name: "a 206 is never stored as the whole resource",
            response: ["Cache-Control: max-age=60"],
            status: 206,
            expected: .doNotStore(.partial)
        ),
        Case(
            name: "a 416 with explicit freshness is not stored (it answers a range; under the URL's key it would answer every request)",
            response: ["Cache-Control: max-age=3600", "Content-Range: bytes */10"],
            status: 416,
            expected: .doNotStore(.partial)
        ),
        Case(name: "a 304 is not stored", status: 304, expected: .doNotStore(.status)),
        Case(name: "a 201 without explicit freshness is not stored", status: 201, expected: .doNotStore(.status)),
        Case(name: "a 500 without explicit freshness is not stored", status: 500, expected: .doNotStore(.status)),
        Case(
            name: "a 500 with max-age is stored",
            response: ["Cache-Control: max-age=5"],
            status: 500,
            expected: .store(notes: [])
        ),
        Case(name: "a 302 without explicit freshness is not stored", status: 302, expected: .doNotStore(.status)),
        Case(name: "a 302 without freshness is stored when force-ttl applies", status: 302, forced: true, expected: .store(notes: [])),
        Case(name: "a 307 without freshness is stored when force-ttl applies", status: 307, forced: true, expected: .store(notes: [])),
        Case(name: "a 401 is not stored even when force-ttl applies", status: 401, forced: true, expected: .doNotStore(.status)),
        Case(
            name: "force-ttl does not make a no-store 302 storable",
            response: ["Cache-Control: no-store"],
            status: 302,
            forced: true,
            expected: .doNotStore(.noStore)
        ),
        Case(
            name: "a 302 with max-age is stored",
            response: ["Cache-Control: max-age=60"],
            status: 302,
            expected: .store(notes: [])
        ),
        Case(
            name: "a 307 with Expires is stored",
            response: ["Expires: @60"],
            status: 307,
            expected: .store(notes: [])
        ),
        Case(
            name: "a 302 with s-maxage is stored by a shared cache",
            response: ["Cache-Control: s-maxage=60"],
            status: 302,
            expected: .store(notes: [])
        ),
        Case(
            name: "a 302 with only s-maxage is not stored by a private cache",
            response: ["Cache-Control: s-maxage=60"],
            status: 302,
            rules: .private,
            expected: .doNotStore(.status)
        ),
        Case(name: "heuristically cacheable statuses are stored", status: 410, expected: .store(notes: [])),
        Case(
            name: "a response from the cache is not stored again",
            fromNetwork: false,
            expected: .doNotStore(.notFromNetwork)
        ),
        Case(name: "the offline policy does not store", policy: .returnCacheDontLoad, expected: .doNotStore(.policy)),
        Case(name: "reload still stores", policy: .reload, expected: .store(notes: [])),
        Case(name: "a session that forbids storing", sessionAllows: false, expected: .doNotStore(.policy)),
        Case(name: "response no-store", response: ["Cache-Control: no-store"], expected: .doNotStore(.noStore)),
        Case(name: "request no-store", request: ["Cache-Control: no-store"], expected: .doNotStore(.noStore)),
        Case(
            name: "must-understand on an understood status overrides no-store",
            response: ["Cache-Control: no-store, must-understand, max-age=60"],
            expected: .store(notes: [])
        ),
        Case(
            name: "must-understand on an unknown status is not stored",
            response: ["Cache-Control: no-store, must-understand, max-age=60"],
            status: 299,
            expected: .doNotStore(.status)
        ),
        Case(
            name: "private is not stored by a shared cache",
            response: ["Cache-Control: private, max-age=60"],
            expected: .doNotStore(.private)
        ),
        Case(
            name: "private is stored by a private cache",
            response: ["Cache-Control: private, max-age=60"],
            rules: .private,
            expected: .store(notes: [])
        ),
        Case(
            name: "private with field names is stored without those fields",
            response: ["Cache-Control: private=\"x-user\", max-age=60", "X-User: alice"],
            expected: .store(notes: [.privateFieldsStripped])
        ),
        Case(
            name: "Authorization without permission is not stored",
            response: ["Cache-Control: max-age=60"],
            request: ["Authorization: Basic eDp5"],
            expected: .doNotStore(.authorization)
        ),
        Case(
            name: "Authorization with public is stored",
            response: ["Cache-Control: public, max-age=60"],
            request: ["Authorization: Basic eDp5"],
            expected: .store(notes: [])
        ),
        Case(
            name: "Authorization with s-maxage is stored",
            response: ["Cache-Control: s-maxage=60"],
            request: ["Authorization: Basic eDp5"],
            expected: .store(notes: [])
        ),
        Case(
            name: "Authorization with must-revalidate is stored",
            response: ["Cache-Control: must-revalidate, max-age=60"],
            request: ["Authorization: Basic eDp5"],
            expected: .store(notes: [])
        ),
        Case(
            name: "Authorization in a private cache is stored",
            response: ["Cache-Control: max-age=60"],
            request: ["Authorization: Basic eDp5"],
            rules: .private,
            expected: .store(notes: [])
        ),
        Case(
            name: "Vary: * is not stored",
            response: ["Cache-Control: max-age=60", "Vary: *"],
            expected: .doNotStore(.varyStar)
        ),
        Case(name: "a body over 5 % of the capacity is not stored", bodyLength: 51, expected: .doNotStore(.sizeLimit)),
        Case(name: "a body of exactly 5 % of the capacity is stored", bodyLength: 50, expected: .store(notes: [])),
        Case(name: "an unknown length defers the size check", bodyLength: nil, expected: .store(notes: [])),
        Case(
            name: "Set-Cookie is stripped from the stored copy",
            response: ["Cache-Control: max-age=60", "Set-Cookie: id=1"],
            expected: .store(notes: [.setCookieStripped])
        ),
        Case(
            name: "Pragma no-cache in a response still stores (always revalidated)",
            response: ["Pragma: no-cache"],
            expected: .store(notes: [])
        ),
        Case(
            name: "checks run in order: method before no-store",
            response: ["Cache-Control: no-store"],
            method: .post,
            expected: .doNotStore(.method)
        ),
        Case(
            name: "checks run in order: partial before no-store",
            response: ["Cache-Control: no-store"],
            status: 206,
            expected: .doNotStore(.partial)
        ),
        Case(
            name: "checks run in order: no-store before size",
            response: ["Cache-Control: no-store"],
            bodyLength: 1_000_000,
            expected: .doNotStore(.noStore)
        ),
    ]

    @Test("The gate's answer", arguments: cases)
    func gate(_ testCase: Case) {
        var context = StorabilityContext(
            capacity: 1_000,
            fromNetwork: testCase.fromNetwork,
            policy: testCase.policy,
            sessionAllowsStoring: testCase.sessionAllows
        )
        context.freshnessForced = testCase.forced
        let result = testCase.rules.storability(
            request: request(testCase.request, method: testCase.method, url: testCase.url),
            response: response(testCase.response, status: testCase.status),
            bodyLength: testCase.bodyLength,
            context: context
        )
        #expect(result == testCase.expected)
    }

    @Test("The gate's order is the documented one")
    func order() {
        #expect(
            CacheRules.storabilityChecks.map(\.reason.rawValue) == [
                "scheme", "method", "partial", "status", "not-from-network", "policy", "no-store", "private",
                "authorization", "vary-star", "size-limit",
            ]
        )
    }

    @Test("Stored headers drop hop-by-hop fields, cookies and private fields")
    func storedHeaders() {
        let (kept, stripped) = StoredHeaders.filter(
            fields([
                "Connection: close, X-Hop", "X-Hop: 1", "Keep-Alive: timeout=5", "Transfer-Encoding: chunked",
                "Set-Cookie: a=1", "Set-Cookie: b=2", "Cache-Control: private=\"x-user\", max-age=9", "X-User: u",
                "Content-Type: text/plain", "ETag: \"1\"",
            ]),
            shared: true
        )
        #expect(kept.map(\.name) == ["Cache-Control", "Content-Type", "ETag"])
        #expect(stripped == ["set-cookie", "x-user"])
        #expect(
            StoredHeaders.filter(fields(["X-User: u", "Cache-Control: private=\"x-user\""]), shared: false).fields
                .contains("X-User")
        )
    }
}
