import Foundation
import Testing
import TollgateCache
import TollgateHTTP

/// RFC 9213 targeted cache control, as a cache with targeted fields reads a response.
@Suite("Targeted cache control (CDN-Cache-Control)")
struct TargetedCacheControlTests {
    let gateway = CacheRules(targetedFields: ["Tollgate-Cache-Control", "CDN-Cache-Control"])

    private func decide(_ rules: CacheRules, _ lines: [String], age: TimeInterval = 0) -> CacheLookupDecision {
        rules.decide(request: request(), policy: .protocol, stored: stored(lines, received: -age), now: now)
    }

    private func isFresh(_ decision: CacheLookupDecision) -> Bool {
        if case .fresh = decision { return true }
        return false
    }

    @Test("The targeted field replaces Cache-Control for this cache: its freshness, and its refusals")
    func replacesCacheControl() {
        #expect(isFresh(decide(gateway, ["CDN-Cache-Control: max-age=600", "Cache-Control: no-store"])))
        #expect(!isFresh(decide(gateway, ["CDN-Cache-Control: max-age=0", "Cache-Control: max-age=600"])))
        #expect(!isFresh(decide(gateway, ["CDN-Cache-Control: no-cache", "Cache-Control: max-age=600"])))
        // Without targeted fields (a forward proxy's default) the field means nothing.
        #expect(isFresh(decide(.shared, ["CDN-Cache-Control: max-age=0", "Cache-Control: max-age=600"])))
        #expect(
            gateway.storability(
                request: request(), response: response(["CDN-Cache-Control: max-age=60", "Cache-Control: no-store"]),
                bodyLength: 3, context: StorabilityContext(capacity: 1 << 30)
            ).allowsStoring
        )
        #expect(
            !gateway.storability(
                request: request(), response: response(["CDN-Cache-Control: private", "Cache-Control: max-age=60"]),
                bodyLength: 3, context: StorabilityContext(capacity: 1 << 30)
            ).allowsStoring
        )
    }

    @Test("The cache's own name comes before CDN-Cache-Control")
    func ownNameFirst() {
        let lines = ["Tollgate-Cache-Control: max-age=0", "CDN-Cache-Control: max-age=600", "Cache-Control: max-age=600"]
        #expect(!isFresh(decide(gateway, lines)))
        #expect(isFresh(decide(CacheRules(targetedFields: ["CDN-Cache-Control"]), lines)))
    }

    @Test("A targeted field that is not a valid Structured Field, or gives delta-seconds another type, is ignored")
    func invalidFieldsAreIgnored() {
        for value in ["max-age=10000, &&&&&", "max-age=\"10000\"", "max-age=1.5", "max-age=-1", "Max-Age=10000"] {
            #expect(!isFresh(decide(gateway, ["CDN-Cache-Control: \(value)", "Cache-Control: no-cache"])), "\(value)")
        }
        #expect(isFresh(decide(gateway, ["CDN-Cache-Control: max-age=600, stale-if-error=30;x=1", "Cache-Control: no-cache"])))
    }
}
