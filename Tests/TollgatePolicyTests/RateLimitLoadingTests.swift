import Testing
@testable import TollgatePolicy

@Suite("access.rate-limit: read from the file")
struct RateLimitLoadingTests {
    @Test("rate per second or minute, burst 0 by default; bad rates and bursts refused at their line")
    func readsTheLimit() throws {
        let perSecond = try Fixture.load("access:\n  rate-limit: { rate: 20/s, burst: 40 }\n")
        #expect(perSecond.access.rateLimit == .init(requestsPerSecond: 20, burst: 40))
        let perMinute = try Fixture.load("access:\n  rate-limit: { rate: 30/m }\n")
        #expect(perMinute.access.rateLimit == .init(requestsPerSecond: 0.5, burst: 0))
        #expect(try Fixture.load("listen:\n  - address: \"127.0.0.1:3128\"\n").access.rateLimit == nil)
        let problems = Fixture.problems("access:\n  rate-limit: { rate: 20/h, burst: -1 }\n")
        #expect(problems.contains { $0.hasPrefix("t.yaml:2: access.rate-limit.rate:") && $0.contains("'20/h' is not a rate") }, "\(problems)")
        #expect(Fixture.problems("access:\n  rate-limit: { burst: 5 }\n").contains { $0.contains("rate") }, "rate is required")
        #expect(Fixture.problems("access:\n  rate-limit: { rate: 0/s }\n").contains { $0.contains("'0/s' is not a rate") })
    }
}
