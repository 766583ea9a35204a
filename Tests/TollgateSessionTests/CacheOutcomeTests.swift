import Testing
import TollgateSession

@Suite("Cache-Status members (RFC 9211)")
struct CacheOutcomeTests {
    @Test("Every part in its place")
    func members() {
        #expect(CacheOutcome(result: .hit).cacheStatus() == "tollgate; hit")
        #expect(CacheOutcome(result: .uriMiss, stored: true).cacheStatus() == "tollgate; fwd=uri-miss; stored")
        #expect(
            CacheOutcome(result: .stale, forwardStatus: 304, stored: true).cacheStatus(cacheName: "edge")
                == "edge; fwd=stale; fwd-status=304; stored"
        )
        #expect(
            CacheOutcome(result: .uriMiss, detail: "no-store").cacheStatus() == "tollgate; fwd=uri-miss; detail=\"no-store\""
        )
        var stale = CacheOutcome(result: .hit)
        stale.servedStale = true
        #expect(stale.cacheStatus() == "tollgate; hit; detail=\"stale\"")
        var staleWithDetail = CacheOutcome(result: .stale, forwardStatus: 503, detail: "stale-if-error")
        staleWithDetail.servedStale = true
        #expect(
            staleWithDetail.cacheStatus() == "tollgate; fwd=stale; fwd-status=503; detail=\"stale,stale-if-error\""
        )
    }

    @Test("A request that could not go forward and found nothing stored is a hit to Cache-Status only: nothing came from storage")
    func unansweredMiss() {
        let missed = CacheOutcome(result: .hit, detail: CacheOutcome.notStoredDetail)
        #expect(missed.cacheStatus() == "tollgate; hit; detail=\"not-stored\"")
        #expect(missed.isUnansweredMiss)
        #expect(!missed.isHit)
        #expect(CacheOutcome(result: .hit).isHit)
        #expect(!CacheOutcome(result: .hit).isUnansweredMiss)
    }
}
