import Foundation
import NIOCore
import Testing
import TollgateCache
import TollgateHTTP
import TollgatePolicy
import TollgateSession
import TollgateTesting

@Suite("A rule's cache-key normalization, end to end through a policy session", .timeLimit(.minutes(1)))
struct CacheKeyRuleTests {
    @Test("drop-query makes URLs that differ only in a signature share one stored response")
    func dropQuery() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, headers: ["Cache-Control": "max-age=60"], body: request.target)
        }
        defer { origin.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-key-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cache = try ResponseCache(path: directory, maxSize: 16 << 20)
        defer { cache.store.close() }
        let configuration = try Fixture.load(
            """
            hosts:
              - match: "127.0.0.1"
                cache: { key: { drop-query: [sig] } }
            """
        )
        let runtime = PolicyRuntime(configuration: configuration, sourceFile: nil) { _, _, session in
            session.responseCache = cache
        }
        defer { runtime.shutdown() }
        let first = origin.url("/file?v=1&sig=aaa")
        let second = origin.url("/file?v=1&sig=bbb")
        let other = origin.url("/file?v=2&sig=aaa")
        let (a, _) = try await runtime.route(first).session.data(for: Request(url: first))
        let (b, _) = try await runtime.route(second).session.data(for: Request(url: second))
        let (c, _) = try await runtime.route(other).session.data(for: Request(url: other))
        #expect(String(buffer: a) == "/file?v=1&sig=aaa")
        #expect(String(buffer: b) == "/file?v=1&sig=aaa")
        #expect(String(buffer: c) == "/file?v=2&sig=aaa")
        #expect(origin.requestCount == 2)
    }
}
