import Foundation
import Testing
import TollgateTLS
import TollgateTesting

@testable import TollgateProxy

/// When a listener fetches its certificates' OCSP responses again (``OCSPStapleFetcher``).
@Suite("OCSP staple refresh times")
struct OCSPStapleFetcherTests {
    @Test("Refreshed at half the response's validity, no sooner than 5 minutes and no later than an hour")
    func refreshDelay() async throws {
        let ca = try CertificateAuthority.create(commonName: "Refresh CA")
        let leaf = try ca.issueLeaf(for: "localhost")
        let chain = [leaf.certificate, ca.certificate]
        let response = try OCSPResponse(der: try await TestOCSPResponder.response(by: ca, for: leaf, validFor: 7), for: chain)
        let now = response.thisUpdate
        #expect(OCSPStapleFetcher.refreshDelay(after: response, now: now) == .seconds(3600), "half of a week: at most an hour")
        let halfway = now.addingTimeInterval(3.5 * 86_400)
        #expect(OCSPStapleFetcher.refreshDelay(after: response, now: halfway.addingTimeInterval(-600)) == .seconds(600))
        #expect(OCSPStapleFetcher.refreshDelay(after: response, now: halfway.addingTimeInterval(3600)) == .seconds(300), "past halfway: at least 5 minutes")
    }
}
