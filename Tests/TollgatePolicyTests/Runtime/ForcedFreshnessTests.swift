import Foundation
import Testing
import TollgateCache
import TollgateHTTP
import TollgatePolicy
import TollgateSession

/// `force-ttl`: the headers the stored copy gets, and what the cache's own freshness rules make of them.
@Suite("CachedResponse.forcingFreshness (force-ttl)")
struct ForcedFreshnessTests {
    /// When the response head arrived.
    static let arrival = Date(timeIntervalSinceReferenceDate: 800_000_000)

    static func response(_ headers: HeaderFields, inFlight: TimeInterval = 0) -> CachedResponse {
        CachedResponse(
            request: HTTPRequestHead(url: HTTPURL(scheme: "http", host: "a.test")),
            response: HTTPResponseHead(status: 200, headerFields: headers),
            bodyLength: 1,
            requestTime: arrival.addingTimeInterval(-inFlight),
            responseTime: arrival
        )
    }

    static func cacheControl(_ headers: HeaderFields, ttl: Duration = .seconds(600), shared: Bool = true) -> [String] {
        response(headers).forcingFreshness(for: ttl, sharedCache: shared).response.headerFields.values(
            for: "Cache-Control"
        )
    }

    @Test func sMaxAgeIsSetAndReplacesAnEarlierOne() {
        #expect(Self.cacheControl([:]) == ["s-maxage=600"])
        #expect(Self.cacheControl(["Cache-Control": "s-maxage=5, public"]) == ["s-maxage=600, public"])
        #expect(Self.cacheControl(["Cache-Control": "max-age=60"]) == ["max-age=60, s-maxage=600"])
    }

    @Test func unqualifiedNoCacheIsRemovedButTheQualifiedFormStays() {
        #expect(Self.cacheControl(["Cache-Control": "no-cache, must-revalidate"]) == ["s-maxage=600, must-revalidate"])
        #expect(
            Self.cacheControl(["Cache-Control": "no-cache=\"Set-Cookie\""]) == ["s-maxage=600, no-cache=\"set-cookie\""]
        )
    }

    @Test func severalCacheControlLinesBecomeOneAndOtherFieldsStay() {
        let proposed = Self.response(
            HeaderFields([
                ("Cache-Control", "public"), ("Expires", "0"), ("Cache-Control", "max-age=1"), ("Pragma", "no-cache"),
            ])
        )
        let forced = proposed.forcingFreshness(for: .seconds(600))
        #expect(
            forced.response.headerFields.pairs.map { "\($0.0): \($0.1)" } == [
                "Cache-Control: max-age=1, s-maxage=600, public", "Expires: 0", "Pragma: no-cache",
            ]
        )
        #expect(forced.request == proposed.request)
        #expect(forced.responseTime == proposed.responseTime)
        #expect(forced.bodyLength == proposed.bodyLength)
    }

    @Test func aPrivateCacheGetsMaxAgeAsWell() {
        #expect(Self.cacheControl(["Cache-Control": "max-age=60"], shared: false) == ["max-age=600, s-maxage=600"])
    }

    @Test func aTTLBelowASecondIsRoundedUp() {
        #expect(Self.cacheControl([:], ttl: .milliseconds(500)) == ["s-maxage=1"])
    }

    @Test func theAgeOnArrivalIsAddedSoTheTTLCountsFromArrival() {
        // Age 100 plus one second in flight (corrected_age_value), no Date: 600 + 101.
        let aged = Self.response(["Age": "100"], inFlight: 1).forcingFreshness(for: .seconds(600))
        #expect(aged.response.headerFields["Cache-Control"] == "s-maxage=701")
        // A Date 50 s before arrival (apparent_age) wins over a smaller Age.
        let dated = Self.response(["Age": "10", "Date": HTTPDate.format(Self.arrival.addingTimeInterval(-50))])
            .forcingFreshness(for: .seconds(600))
        #expect(dated.response.headerFields["Cache-Control"] == "s-maxage=650")
    }

    @Test(arguments: [true, false])
    func theCachesFreshnessRulesSeeItFreshForTheTTLFromArrival(shared: Bool) {
        let forced = Self.response(
            ["Age": "3000", "Cache-Control": "max-age=0, no-cache", "Date": HTTPDate.format(Self.arrival)]
        ).forcingFreshness(for: .seconds(600), sharedCache: shared)
        func freshness(after seconds: Double) -> Freshness {
            Freshness(
                headerFields: forced.response.headerFields,
                status: 200,
                requestTime: Self.arrival,
                responseTime: Self.arrival,
                now: Self.arrival.addingTimeInterval(seconds),
                rules: shared ? .shared : .private
            )
        }
        #expect(freshness(after: 599).isFresh)
        #expect(!freshness(after: 601).isFresh)
    }
}
