import Foundation
import Testing
import TollgateCache
import TollgateHTTP

/// The decision table, in the spirit of OkHttp's CacheTest but for a shared cache.
@Suite("decide(request:policy:stored:now:)", .timeLimit(.minutes(1)))
struct CacheDecisionTests {
    enum Outcome: Equatable, Sendable {
        case fresh, staleAcceptable, staleWhileRevalidate, revalidate
        case miss(CacheLookupDecision.MissReason)
        case unavailable(CacheLookupDecision.UnavailableReason)

        init(_ decision: CacheLookupDecision) {
            switch decision {
            case .fresh: self = .fresh
            case .staleAcceptable: self = .staleAcceptable
            case .staleWhileRevalidate: self = .staleWhileRevalidate
            case .revalidate: self = .revalidate
            case .miss(let reason): self = .miss(reason)
            case .unavailable(let reason): self = .unavailable(reason)
            }
        }
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        /// Stored response fields; nil: nothing stored.
        var stored: [String]?
        var status = 200
        /// When the stored response was received, relative to now.
        var received: TimeInterval = 0
        var addsDate = true
        var originalRequest: [String] = []
        var request: [String] = []
        var method: HTTPMethod = .get
        var policy: RequestCachePolicy = .protocol
        var rules: CacheRules = .shared
        var expected: Outcome

        var testDescription: String { name }
    }

    static let hour: TimeInterval = 3_600
    static let day: TimeInterval = 86_400

    static let freshness: [Case] = [
        Case(
            name: "max-age not yet reached is fresh",
            stored: ["Cache-Control: max-age=60"],
            received: -30,
            expected: .fresh
        ),
        Case(
            name: "max-age passed must be revalidated",
            stored: ["Cache-Control: max-age=60"],
            received: -120,
            expected: .revalidate
        ),
        Case(
            name: "age equal to max-age is stale",
            stored: ["Cache-Control: max-age=60"],
            received: -60,
            expected: .revalidate
        ),
        Case(
            name: "s-maxage wins over a longer max-age in a shared cache",
            stored: ["Cache-Control: max-age=600, s-maxage=10"],
            received: -60,
            expected: .revalidate
        ),
        Case(
            name: "s-maxage wins over a shorter max-age in a shared cache",
            stored: ["Cache-Control: max-age=10, s-maxage=600"],
            received: -60,
            expected: .fresh
        ),
        Case(
            name: "a private cache ignores s-maxage",
            stored: ["Cache-Control: max-age=600, s-maxage=10"],
            received: -60,
            rules: .private,
            expected: .fresh
        ),
        Case(
            name: "Expires minus Date gives the lifetime",
            stored: ["Expires: @3600"],
            received: -60,
            expected: .fresh
        ),
        Case(name: "Expires in the past is stale", stored: ["Expires: @-3600"], received: -60, expected: .revalidate),
        Case(
            name: "an invalid Expires is already expired, even with Last-Modified",
            stored: ["Expires: 0", "Last-Modified: @-8640000"],
            received: -10,
            expected: .revalidate
        ),
        Case(
            name: "Expires without Date is measured from the response time",
            stored: ["Expires: @60"],
            received: -30,
            addsDate: false,
            expected: .fresh
        ),
        Case(
            name: "max-age wins over Expires",
            stored: ["Cache-Control: max-age=3600", "Expires: @-10"],
            received: -60,
            expected: .fresh
        ),
        Case(
            name: "heuristic freshness from Last-Modified for a 200",
            stored: ["Last-Modified: @-8640000"],
            received: -3600,
            expected: .fresh
        ),
        Case(
            name: "heuristic freshness is capped at one day",
            stored: ["Last-Modified: @-8640000"],
            received: -(day + hour),
            expected: .revalidate
        ),
        Case(
            name: "heuristic freshness is 10 % of Date minus Last-Modified",
            stored: ["Last-Modified: @-11000"],
            received: -1000,
            expected: .revalidate
        ),
        Case(
            name: "heuristic freshness within 10 %",
            stored: ["Last-Modified: @-11000"],
            received: -900,
            expected: .fresh
        ),
        Case(
            name: "heuristic freshness applies to a 404",
            stored: ["Last-Modified: @-8640000"],
            status: 404,
            received: -60,
            expected: .fresh
        ),
        Case(
            name: "heuristic freshness applies to a 301",
            stored: ["Last-Modified: @-8640000"],
            status: 301,
            received: -60,
            expected: .fresh
        ),
        Case(
            name: "no heuristic freshness for a 302",
            stored: ["Last-Modified: @-8640000"],
            status: 302,
            received: -60,
            expected: .revalidate
        ),
        Case(
            name: "no heuristic freshness for a 500",
            stored: ["Last-Modified: @-8640000"],
            status: 500,
            received: -60,
            expected: .revalidate
        ),
        Case(
            name: "public makes any status heuristically fresh",
            stored: ["Cache-Control: public", "Last-Modified: @-8640000"],
            status: 302,
            received: -60,
            expected: .fresh
        ),
        Case(
            name: "no heuristic when max-age=0 is explicit",
            stored: ["Cache-Control: max-age=0", "Last-Modified: @-8640000"],
            received: -1,
            expected: .revalidate
        ),
        Case(name: "no freshness information at all is stale", stored: [], received: -1, expected: .revalidate),
        Case(
            name: "an upstream Age makes a response older",
            stored: ["Cache-Control: max-age=60", "Age: 50"],
            received: -20,
            expected: .revalidate
        ),
        Case(
            name: "a small upstream Age leaves it fresh",
            stored: ["Cache-Control: max-age=60", "Age: 10"],
            received: -20,
            expected: .fresh
        ),
        Case(
            name: "an invalid Age is ignored",
            stored: ["Cache-Control: max-age=60", "Age: soon"],
            received: -20,
            expected: .fresh
        ),
        Case(
            name: "a Date long before the response time makes it old (apparent age)",
            stored: ["Cache-Control: max-age=60", "Date: @-3600"],
            received: -10,
            expected: .revalidate
        ),
        Case(
            name: "a Date in the future does not make it younger",
            stored: ["Cache-Control: max-age=60", "Date: @3600"],
            received: -70,
            expected: .revalidate
        ),
    ]

    static let directives: [Case] = [
        Case(
            name: "response no-cache always revalidates",
            stored: ["Cache-Control: no-cache, max-age=3600"],
            received: -1,
            expected: .revalidate
        ),
        Case(
            name: "response no-cache with field names still serves fresh",
            stored: ["Cache-Control: max-age=60, no-cache=\"x-secret\""],
            received: -1,
            expected: .fresh
        ),
        Case(
            name: "response Pragma no-cache without Cache-Control revalidates",
            stored: ["Pragma: no-cache", "Expires: @3600"],
            received: -1,
            expected: .revalidate
        ),
        Case(
            name: "request no-cache revalidates a fresh response",
            stored: ["Cache-Control: max-age=3600"],
            received: -1,
            request: ["Cache-Control: no-cache"],
            expected: .revalidate
        ),
        Case(
            name: "request Pragma no-cache without Cache-Control is no-cache",
            stored: ["Cache-Control: max-age=3600"],
            received: -1,
            request: ["Pragma: no-cache"],
            expected: .revalidate
        ),
        Case(
            name: "request Pragma no-cache is ignored beside Cache-Control",
            stored: ["Cache-Control: max-age=3600"],
            received: -1,
            request: ["Pragma: no-cache", "Cache-Control: max-stale=0"],
            expected: .fresh
        ),
        Case(
            name: "request max-age shorter than the age revalidates",
            stored: ["Cache-Control: max-age=60"],
            received: -30,
            request: ["Cache-Control: max-age=10"],
            expected: .revalidate
        ),
        Case(
            name: "request max-age longer than the age is fresh",
            stored: ["Cache-Control: max-age=60"],
            received: -30,
            request: ["Cache-Control: max-age=45"],
            expected: .fresh
        ),
        Case(
            name: "request max-age=0 revalidates",
            stored: ["Cache-Control: max-age=60"],
            received: -1,
            request: ["Cache-Control: max-age=0"],
            expected: .revalidate
        ),
        Case(
            name: "request min-fresh beyond the remaining lifetime revalidates",
            stored: ["Cache-Control: max-age=60"],
            received: -30,
            request: ["Cache-Control: min-fresh=40"],
            expected: .revalidate
        ),
        Case(
            name: "request min-fresh within the remaining lifetime is fresh",
            stored: ["Cache-Control: max-age=60"],
            received: -30,
            request: ["Cache-Control: min-fresh=20"],
            expected: .fresh
        ),
        Case(
            name: "request max-stale covering the staleness serves stale",
            stored: ["Cache-Control: max-age=60"],
            received: -120,
            request: ["Cache-Control: max-stale=100"],
            expected: .staleAcceptable
        ),
        Case(
            name: "request max-stale too short revalidates",
            stored: ["Cache-Control: max-age=60"],
            received: -120,
            request: ["Cache-Control: max-stale=10"],
            expected: .revalidate
        ),
        Case(
            name: "request bare max-stale serves any stale response",
            stored: ["Cache-Control: max-age=60"],
            received: -day,
            request: ["Cache-Control: max-stale"],
            expected: .staleAcceptable
        ),
        Case(
            name: "request max-stale is not honoured with must-revalidate",
            stored: ["Cache-Control: max-age=60, must-revalidate"],
            received: -120,
            request: ["Cache-Control: max-stale=1000"],
            expected: .revalidate
        ),
        Case(
            name: "request max-stale is not honoured with proxy-revalidate in a shared cache",
            stored: ["Cache-Control: max-age=60, proxy-revalidate"],
            received: -120,
            request: ["Cache-Control: max-stale=1000"],
            expected: .revalidate
        ),
        Case(
            name: "a private cache honours max-stale despite proxy-revalidate",
            stored: ["Cache-Control: max-age=60, proxy-revalidate"],
            received: -120,
            request: ["Cache-Control: max-stale=1000"],
            rules: .private,
            expected: .staleAcceptable
        ),
        Case(
            name: "request max-stale is not honoured with s-maxage in a shared cache",
            stored: ["Cache-Control: s-maxage=60"],
            received: -120,
            request: ["Cache-Control: max-stale=1000"],
            expected: .revalidate
        ),
        Case(
            name: "only-if-cached with a fresh response is a hit",
            stored: ["Cache-Control: max-age=60"],
            received: -1,
            request: ["Cache-Control: only-if-cached"],
            expected: .fresh
        ),
        Case(
            name: "only-if-cached with a stale response is unavailable (504)",
            stored: ["Cache-Control: max-age=60"],
            received: -120,
            request: ["Cache-Control: only-if-cached"],
            expected: .unavailable(.onlyIfCached)
        ),
        Case(
            name: "only-if-cached with nothing stored is unavailable (504)",
            stored: nil,
            request: ["Cache-Control: only-if-cached"],
            expected: .unavailable(.onlyIfCached)
        ),
        Case(
            name: "only-if-cached with max-stale serves stale",
            stored: ["Cache-Control: max-age=60"],
            received: -120,
            request: ["Cache-Control: only-if-cached, max-stale"],
            expected: .staleAcceptable
        ),
        Case(name: "nothing stored is a miss", stored: nil, expected: .miss(.notStored)),
        Case(
            name: "stale-while-revalidate within its window serves stale and revalidates",
            stored: ["Cache-Control: max-age=60, stale-while-revalidate=120"],
            received: -100,
            expected: .staleWhileRevalidate
        ),
        Case(
            name: "stale-while-revalidate past its window revalidates",
            stored: ["Cache-Control: max-age=60, stale-while-revalidate=30"],
            received: -100,
            expected: .revalidate
        ),
        Case(
            name: "stale-while-revalidate is not used with must-revalidate",
            stored: ["Cache-Control: max-age=60, must-revalidate, stale-while-revalidate=120"],
            received: -100,
            expected: .revalidate
        ),
        Case(
            name: "stale-while-revalidate is not used when the request sets max-age",
            stored: ["Cache-Control: max-age=60, stale-while-revalidate=120"],
            received: -100,
            request: ["Cache-Control: max-age=30"],
            expected: .revalidate
        ),
        Case(
            name: "stale-while-revalidate with s-maxage is honoured (the origin's explicit grant)",
            stored: ["Cache-Control: s-maxage=60, stale-while-revalidate=120"],
            received: -100,
            expected: .staleWhileRevalidate
        ),
        Case(
            name: "stale-while-revalidate does not apply to a fresh response",
            stored: ["Cache-Control: max-age=600, stale-while-revalidate=120"],
            received: -100,
            expected: .fresh
        ),
    ]

    static let policiesAndSelection: [Case] = [
        Case(
            name: "reload ignores a fresh response",
            stored: ["Cache-Control: max-age=60"],
            received: -1,
            policy: .reload,
            expected: .miss(.reload)
        ),
        Case(
            name: "reload-revalidating validates a fresh response",
            stored: ["Cache-Control: max-age=60"],
            received: -1,
            policy: .reloadRevalidating,
            expected: .revalidate
        ),
        Case(
            name: "reload-revalidating with nothing stored is a miss",
            stored: nil,
            policy: .reloadRevalidating,
            expected: .miss(.notStored)
        ),
        Case(
            name: "return-cache-else-load serves a stale must-revalidate response",
            stored: ["Cache-Control: max-age=60, must-revalidate"],
            received: -day,
            policy: .returnCacheElseLoad,
            expected: .staleAcceptable
        ),
        Case(
            name: "return-cache-else-load serves a fresh response as fresh",
            stored: ["Cache-Control: max-age=60"],
            received: -1,
            policy: .returnCacheElseLoad,
            expected: .fresh
        ),
        Case(
            name: "return-cache-else-load with nothing stored loads",
            stored: nil,
            policy: .returnCacheElseLoad,
            expected: .miss(.notStored)
        ),
        Case(
            name: "return-cache-dont-load serves a no-cache response without asking",
            stored: ["Cache-Control: no-cache"],
            received: -day,
            policy: .returnCacheDontLoad,
            expected: .staleAcceptable
        ),
        Case(
            name: "return-cache-dont-load with nothing stored is unavailable",
            stored: nil,
            policy: .returnCacheDontLoad,
            expected: .unavailable(.offline)
        ),
        Case(
            name: "return-cache-dont-load with a Vary mismatch the request does not accept is unavailable",
            stored: ["Cache-Control: max-age=60", "Vary: Accept-Encoding", "Content-Encoding: gzip"],
            received: -1,
            originalRequest: ["Accept-Encoding: gzip"],
            request: ["Accept-Encoding: br"],
            policy: .returnCacheDontLoad,
            expected: .unavailable(.offline)
        ),
        Case(
            name: "return-cache-dont-load serves the identity variant a warm stored to a request accepting gzip",
            stored: ["Cache-Control: max-age=60", "Vary: Accept-Encoding"],
            received: -1,
            originalRequest: [],
            request: ["Accept-Encoding: gzip, deflate"],
            policy: .returnCacheDontLoad,
            expected: .fresh
        ),
        Case(
            name: "online, the identity variant does not stand in for a request accepting gzip",
            stored: ["Cache-Control: max-age=60", "Vary: Accept-Encoding"],
            received: -1,
            originalRequest: [],
            request: ["Accept-Encoding: gzip, deflate"],
            expected: .miss(.varyMismatch)
        ),
        Case(
            name: "return-cache-dont-load with another Accept-Language is unavailable (only Accept and Accept-Encoding are negotiated)",
            stored: ["Cache-Control: max-age=60", "Vary: Accept-Encoding, Accept-Language"],
            received: -1,
            originalRequest: ["Accept-Language: de"],
            request: ["Accept-Encoding: gzip", "Accept-Language: en"],
            policy: .returnCacheDontLoad,
            expected: .unavailable(.offline)
        ),
        Case(
            name: "a POST is not answered from the cache",
            stored: ["Cache-Control: max-age=60"],
            received: -1,
            method: .post,
            expected: .miss(.method)
        ),
        Case(
            name: "a HEAD is answered from the stored GET response",
            stored: ["Cache-Control: max-age=60"],
            received: -1,
            method: .head,
            expected: .fresh
        ),
        Case(
            name: "matching Vary'd fields select the stored response",
            stored: ["Cache-Control: max-age=60", "Vary: Accept-Encoding"],
            received: -1,
            originalRequest: ["Accept-Encoding: gzip"],
            request: ["Accept-Encoding: gzip"],
            expected: .fresh
        ),
        Case(
            name: "Vary'd fields compare after whitespace normalization",
            stored: ["Cache-Control: max-age=60", "Vary: Accept-Language"],
            received: -1,
            originalRequest: ["Accept-Language: en,fr"],
            request: ["Accept-Language: en, fr"],
            expected: .fresh
        ),
        Case(
            name: "a different Vary'd field value is a miss",
            stored: ["Cache-Control: max-age=60", "Vary: Accept-Encoding"],
            received: -1,
            originalRequest: ["Accept-Encoding: gzip"],
            request: ["Accept-Encoding: br"],
            expected: .miss(.varyMismatch)
        ),
        Case(
            name: "a Vary'd field absent from the new request is a miss",
            stored: ["Cache-Control: max-age=60", "Vary: Accept-Encoding"],
            received: -1,
            originalRequest: ["Accept-Encoding: gzip"],
            expected: .miss(.varyMismatch)
        ),
        Case(
            name: "a Vary'd field absent from both requests matches",
            stored: ["Cache-Control: max-age=60", "Vary: Accept-Encoding"],
            received: -1,
            expected: .fresh
        ),
        Case(
            name: "Vary: * never matches",
            stored: ["Cache-Control: max-age=60", "Vary: *"],
            received: -1,
            expected: .miss(.varyMismatch)
        ),
    ]

    @Test("Freshness lifetime and age", arguments: freshness)
    func freshnessCases(_ testCase: Case) {
        check(testCase)
    }

    @Test("Request and response directives", arguments: directives)
    func directiveCases(_ testCase: Case) {
        check(testCase)
    }

    @Test("Request cache policies, methods and Vary", arguments: policiesAndSelection)
    func policyCases(_ testCase: Case) {
        check(testCase)
    }

    private func check(_ testCase: Case) {
        let storedResponse = testCase.stored.map {
            stored(
                $0,
                status: testCase.status,
                received: testCase.received,
                addsDate: testCase.addsDate,
                originalRequest: testCase.originalRequest
            )
        }
        let decision = testCase.rules.decide(
            request: request(testCase.request, method: testCase.method),
            policy: testCase.policy,
            stored: storedResponse,
            now: now
        )
        #expect(Outcome(decision) == testCase.expected, "\(decision)")
    }

    @Test("A hit carries the stored response with Age set and no-cache fields withheld")
    func hitHead() throws {
        let storedResponse = stored(
            ["Cache-Control: max-age=600, no-cache=\"x-secret\"", "X-Secret: token", "Age: 5", "ETag: \"v1\""],
            received: -40
        )
        let decision = CacheRules.shared.decide(request: request(), policy: .protocol, stored: storedResponse, now: now)
        let hit = try #require(decision.hit)
        #expect(hit.withheldFields == ["x-secret"])
        let head = hit.responseHead
        #expect(head.headerFields["X-Secret"] == nil)
        #expect(head.headerFields.values(for: "Age") == ["45"])
        #expect(head.headerFields["ETag"] == "\"v1\"")
        #expect(!hit.isStale)
    }

    @Test("Hits of one stored response at one age share one field list; another age, another response or another thread get their own")
    func hitHeadsShareFields() throws {
        let first = stored(["Cache-Control: max-age=600", "Age: 5", "ETag: \"v1\""], received: -40)
        let second = stored(["Cache-Control: max-age=600", "ETag: \"v2\""], received: -40)
        func head(_ storedResponse: StoredResponse, at time: Date) throws -> HeaderFields {
            let decision = CacheRules.shared.decide(request: request(), policy: .protocol, stored: storedResponse, now: time)
            return try #require(decision.hit).responseHead.headerFields
        }
        let a = try head(first, at: now)
        let b = try head(first, at: now)
        #expect(a.values(for: "Age") == ["45"] && a.sharesStorage(with: b))
        #expect(!a.sharesStorage(with: first.headerFields))
        // The same age but other stored fields: that response's own lines, with the same Age.
        let other = try head(second, at: now)
        #expect(other.values(for: "Age") == ["40"] && other["ETag"] == "\"v2\"" && !other.sharesStorage(with: a))
        let otherAgain = try head(second, at: now)
        #expect(otherAgain == other)
        // A second later: a new Age.
        let later = try head(first, at: now.addingTimeInterval(1))
        #expect(later.values(for: "Age") == ["46"] && later["ETag"] == "\"v1\"" && !later.sharesStorage(with: a))
        // Back to the first: equal lines again (the memo holds one answer per thread).
        #expect(try head(first, at: now) == a)
        // Another thread answers from its own memo, with the same lines.
        // (The semaphore orders the thread's write before the read.)
        final class Answer: @unchecked Sendable { var fields: HeaderFields? }
        let fromThread = Answer()
        let done = DispatchSemaphore(value: 0)
        let thread = Thread { [first] in
            let decision = CacheRules.shared.decide(request: request(), policy: .protocol, stored: first, now: now)
            fromThread.fields = decision.hit?.responseHead.headerFields
            done.signal()
        }
        thread.start()
        done.wait()
        let threadHead = try #require(fromThread.fields)
        #expect(threadHead == a && !threadHead.sharesStorage(with: a))
    }

    @Test("HeaderFields.sharesStorage: a copy shares until one of them changes; equal lists built apart do not")
    func sharingStorage() {
        let built: HeaderFields = ["A": "1", "B": "2"]
        var copy = built
        #expect(copy.sharesStorage(with: built))
        #expect(!HeaderFields([("A", "1"), ("B", "2")]).sharesStorage(with: built))
        copy.add(name: "C", value: "3")
        #expect(!copy.sharesStorage(with: built))
    }

    @Test("A revalidation carries the stored validators and replaces the client's")
    func revalidationRequest() throws {
        let storedResponse = stored(["Cache-Control: max-age=60", "ETag: \"abc\""], received: -120)
        let client = request(["If-None-Match: \"other\"", "If-Modified-Since: @-100000", "Accept: */*"])
        guard
            case .revalidate(let revalidation) = CacheRules.shared.decide(
                request: client,
                policy: .protocol,
                stored: storedResponse,
                now: now
            )
        else {
            Issue.record("expected a revalidation")
            return
        }
        let upstream = revalidation.upstreamRequest(from: client)
        #expect(upstream.headerFields.values(for: "If-None-Match") == ["\"abc\""])
        #expect(upstream.headerFields["If-Modified-Since"] == nil)
        #expect(upstream.headerFields["Accept"] == "*/*")
    }

    @Test(
        "stale-if-error allows serving within its window only",
        arguments: [
            (["Cache-Control: max-age=60, stale-if-error=100"], -100.0, [String](), true),
            (["Cache-Control: max-age=60, stale-if-error=100"], -200.0, [], false),
            (["Cache-Control: max-age=60"], -100.0, ["Cache-Control: stale-if-error=100"], true),
            (["Cache-Control: max-age=60"], -100.0, [], false),
            (["Cache-Control: max-age=60, must-revalidate, stale-if-error=100"], -100.0, [], false),
            (["Cache-Control: max-age=60, proxy-revalidate, stale-if-error=100"], -100.0, [], false),
        ]
    )
    func staleIfError(_ lines: [String], received: TimeInterval, requestLines: [String], allowed: Bool) {
        let storedResponse = stored(lines, received: received)
        #expect(
            CacheRules.shared.staleIfErrorAllows(stored: storedResponse, request: request(requestLines), now: now)
                == allowed
        )
        if case .revalidate(let revalidation) = CacheRules.shared.decide(
            request: request(requestLines),
            policy: .protocol,
            stored: storedResponse,
            now: now
        ) {
            #expect(revalidation.staleIfErrorAllowed == allowed)
        } else {
            Issue.record("expected a revalidation")
        }
    }
}
