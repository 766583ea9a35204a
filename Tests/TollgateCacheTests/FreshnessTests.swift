import Foundation
import Testing
import TollgateCache
import TollgateHTTP

@Suite("Freshness (RFC 9111 §4.2)", .timeLimit(.minutes(1)))
struct FreshnessTests {
    @Test("current_age follows §4.2.3: apparent age, corrected age value, resident time")
    func ageCalculation() {
        // Sent at -12, received at -10; Date 15 s before now, so apparent age 5;
        // Age 3 + response delay 2 = 5 too; resident 10 → 15.
        let age = Freshness.currentAge(
            headerFields: fields(["Date: @-15", "Age: 3"]),
            requestTime: now.addingTimeInterval(-12),
            responseTime: now.addingTimeInterval(-10),
            now: now
        )
        #expect(age == 15)
        // A larger Age wins over the apparent age: 30 + 2 + 10.
        let older = Freshness.currentAge(
            headerFields: fields(["Date: @-15", "Age: 30"]),
            requestTime: now.addingTimeInterval(-12),
            responseTime: now.addingTimeInterval(-10),
            now: now
        )
        #expect(older == 42)
    }

    @Test("A stored response's freshness follows its fields and times when they change")
    func storedResponseAgeFollowsChanges() throws {
        var stored = StoredResponse(
            key: CacheKey(url: try #require(HTTPURL(string: "http://example.com/a"))),
            url: "http://example.com/a",
            status: 200,
            reason: "OK",
            headerFields: fields(["Date: @-15", "Age: 3", "Cache-Control: max-age=100"]),
            requestTime: now.addingTimeInterval(-12),
            responseTime: now.addingTimeInterval(-10)
        )
        func age() -> Double { Freshness(stored, now: now).currentAge }
        let expected = Freshness.currentAge(
            headerFields: stored.headerFields, requestTime: stored.requestTime, responseTime: stored.responseTime, now: now
        )
        #expect(age() == expected)
        #expect(age() == 15)
        stored.headerFields["Age"] = "30"
        #expect(age() == 42)
        stored.requestTime = now.addingTimeInterval(-20)  // response delay 10: 30 + 10 + 10
        #expect(age() == 50)
        stored.responseTime = now.addingTimeInterval(-1)  // delay 19, resident 1: 30 + 19 + 1
        #expect(age() == 50)
        stored.headerFields["Date"] = nil
        stored.headerFields["Age"] = nil  // no Date: apparent age 0; delay 19 + resident 1
        #expect(age() == 20)
    }

    @Test("Age takes the first member of a list and ignores an invalid value")
    func ageField() {
        func age(_ value: String) -> Double {
            Freshness.currentAge(
                headerFields: fields(["Date: @0", "Age: \(value)"]),
                requestTime: now,
                responseTime: now,
                now: now
            )
        }
        #expect(age("20, 30") == 20)
        #expect(age("-5") == 0)
        #expect(age("1e3") == 0)
        #expect(age("99999999999999999999") == Double(CacheControl.maximumDeltaSeconds))
    }

    @Test(
        "Lifetime precedence for a shared cache",
        arguments: [
            (["Cache-Control: s-maxage=5, max-age=10", "Expires: @100"], 5.0, false),
            (["Cache-Control: max-age=10", "Expires: @100"], 10.0, false),
            (["Expires: @100"], 100.0, false),
            (["Expires: garbage"], 0.0, false),
            (["Last-Modified: @-1000"], 100.0, true),
            (["Last-Modified: @-10000000"], 86_400.0, true),
            (["Last-Modified: @100"], 0.0, false),
            ([String](), 0.0, false),
        ]
    )
    func lifetime(_ lines: [String], seconds: Double, heuristic: Bool) {
        var headerFields = fields(lines)
        headerFields.add(name: "Date", value: httpDate(0))
        let result = Freshness.lifetime(headerFields: headerFields, status: 200, responseTime: now)
        #expect(result.seconds == seconds)
        #expect(result.heuristic == heuristic)
    }

    @Test("The heuristic fraction and limit are configurable")
    func heuristicRules() {
        let rules = CacheRules(heuristicFraction: 0.5, heuristicLimit: 300)
        let headerFields = fields(["Date: @0", "Last-Modified: @-400"])
        #expect(
            Freshness.lifetime(headerFields: headerFields, status: 200, responseTime: now, rules: rules).seconds == 200
        )
        let long = fields(["Date: @0", "Last-Modified: @-4000"])
        #expect(Freshness.lifetime(headerFields: long, status: 200, responseTime: now, rules: rules).seconds == 300)
    }

    @Test("stale-while-revalidate and stale-if-error windows, staleness and the Age value")
    func windows() {
        let response = stored(
            ["Cache-Control: max-age=60, stale-while-revalidate=30, stale-if-error=600"],
            received: -90.5,
            addsDate: false
        )
        let freshness = Freshness(response, now: now)
        #expect(freshness.staleWhileRevalidate == 30)
        #expect(freshness.staleIfError == 600)
        #expect(!freshness.isFresh)
        #expect(freshness.staleness == 30.5)
        #expect(freshness.ageFieldValue == 90)
    }
}
