import Foundation
import Testing
import TollgateHTTP
@testable import TollgateProxy

@Suite("GET /har's entries in the order their requests started")
struct HARLogOrderTests {
    private func exchange(_ path: String, ended: Date) -> RecentExchange {
        let head = ClientRequestHead(
            method: "GET", target: "http://127.0.0.1/\(path)", minorVersion: 1, headerFields: [:], framing: .none, byteCount: 0
        )
        return RecentExchange(ExchangeRecord(head: head, clientAddress: "127.0.0.1"), url: nil, ended: ended)
    }

    @Test("A request answered from the cache that ended before the one it followed is listed after it; limit keeps the latest started")
    func startOrder() throws {
        let first = exchange("first", ended: Date())
        Thread.sleep(forTimeInterval: 0.002)
        let second = exchange("second", ended: Date())
        Thread.sleep(forTimeInterval: 0.002)
        let third = exchange("third", ended: Date())
        // The journal's order is the order they ended: the third (a hit) before the second
        // (still committing its response).
        let ended = [first, third, second]
        #expect(HARLog.inStartOrder(ended, limit: nil).map(\.url) == [first, second, third].map(\.url))
        #expect(HARLog.inStartOrder(ended, limit: 1).map(\.url) == [third.url])
        #expect(HARLog.inStartOrder(ended, limit: 0).isEmpty)
        #expect(HARLog.inStartOrder(ended, limit: 5).count == 3)
    }
}
