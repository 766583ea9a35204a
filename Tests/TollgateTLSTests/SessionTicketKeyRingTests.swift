import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import TollgateTLS

@Suite("SessionTicketKeyRing: the keys session tickets are sealed with")
struct SessionTicketKeyRingTests {
    @Test("the ring: a key seals for one period and opens for three; the keys given never change")
    func ticketKeyRing() throws {
        let start = ContinuousClock.now
        let clock = NIOLockedValueBox(start)
        let ring = SessionTicketKeyRing(rotatingEvery: .seconds(60)) { clock.withLockedValue { $0 } }
        let first = try #require(ring.sealingKey())
        #expect(ring.sealingKey() == first)
        #expect(ring.key(named: first.name)?.isSealing == true)
        clock.withLockedValue { $0 = start + .seconds(61) }
        let second = try #require(ring.sealingKey())
        #expect(second != first)
        #expect(ring.key(named: first.name)?.isSealing == false, "the last period's key opens, and the ticket is replaced")
        #expect(ring.key(named: second.name)?.isSealing == true)
        clock.withLockedValue { $0 = start + .seconds(179) }
        #expect(ring.key(named: first.name) != nil)
        clock.withLockedValue { $0 = start + .seconds(180) }
        #expect(ring.key(named: first.name) == nil, "three periods after it was made")
        #expect(ring.key(named: Array(repeating: 7, count: 16)) == nil)
        _ = ring.sealingKey()  // a third key; the first is dropped from the ring
        let given = try SessionTicketKey(bytes: (0..<80).map { _ in UInt8.random(in: 0...255) })
        let fixed = try #require(SessionTicketKeyRing(given: [given]))
        clock.withLockedValue { $0 = start + .seconds(100_000) }
        #expect(fixed.sealingKey() == given && fixed.key(named: given.name)?.isSealing == true)
        #expect(SessionTicketKeyRing(given: []) == nil)
    }
}
