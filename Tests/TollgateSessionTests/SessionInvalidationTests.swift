import Dispatch
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
import TollgateCache
import TollgateHTTP
import TollgateTesting

@testable import TollgateSession

@Suite("Invalidation by unsafe requests (RFC 9111 §4.4)", .timeLimit(.minutes(1)))
struct SessionInvalidationTests {
    @Test("After a POST's answer, a GET is not served the invalidated entry, even before storage has removed it")
    func invalidationInForceBeforeRemoval() async throws {
        let version = NIOLockedValueBox(0)
        let origin = try await LoopbackOrigin.start { request, respond in
            if request.method == "POST" {
                version.withLockedValue { $0 += 1 }
                respond.send(status: 204)
                return
            }
            let current = version.withLockedValue { $0 }
            // After the POST the answer is not stored, so the GET needs no storage thread.
            let control = current == 0 ? "max-age=600" : "no-store"
            respond.send(status: 200, headers: ["Cache-Control": control], body: "version \(current)")
        }
        defer { origin.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-inv-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // One storage thread, which the test holds while the POST is answered: the removal the
        // POST's success queues cannot run before the GET looks.
        let storage = NIOThreadPool(numberOfThreads: 1)
        storage.start()
        let store = try CacheStore(options: CacheStoreOptions(path: directory, maxSize: 64 << 20))
        defer { store.close() }
        let cache = ResponseCache(store: store, threadPool: storage)
        var configuration = SessionConfiguration.ephemeral
        configuration.responseCache = cache
        let session = Session(configuration: configuration)
        defer { session.invalidateAndCancel() }
        let url = origin.url("/item")

        _ = try await load(session, Request(url: url))
        let (hit, _) = try await load(session, Request(url: url))
        #expect(hit.cacheOutcome?.cacheStatus() == "tollgate; hit")

        let gate = DispatchSemaphore(value: 0)
        let held = storage.runIfActive(eventLoop: MultiThreadedEventLoopGroup.singleton.next()) { gate.wait() }
        // Released however the test ends (a failed expectation does not throw).
        defer { gate.signal() }
        let (posted, _) = try await load(session, Request(method: .post, url: url, body: .bytes(ByteBuffer(string: "x"))))
        #expect(posted.response?.status == 204)
        #expect(try store.lookup(CacheKey(url: url), requestHeaders: [:]) != nil, "the entry is still in storage")

        let (after, body) = try await load(session, Request(url: url))
        #expect(body == "version 1")
        #expect(after.cacheOutcome?.isHit == false, "\(after.cacheOutcome.map { "\($0)" } ?? "-")")
        #expect(origin.requests.filter { $0.method == "GET" }.count == 2)
        gate.signal()
        try await held.get()
        try await storage.shutdownGracefully()
    }

    @Test("A POST answered with explicit freshness and its own URI as Content-Location replaces the stored GET response and answers later GETs")
    func postAnswerStoredForGETs() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in
            switch (request.method, request.path) {
            case ("POST", "/item"):
                let fields: HeaderFields = ["Cache-Control": "max-age=600", "Content-Location": "/item"]
                respond.send(status: 200, headers: fields, body: "posted \(String(decoding: request.body, as: UTF8.self))")
            case ("POST", _):
                // Names another resource: what this POST got is not /other's representation.
                respond.send(status: 200, headers: ["Cache-Control": "max-age=600", "Content-Location": "/item"], body: "elsewhere")
            default:
                respond.send(status: 200, headers: ["Cache-Control": "max-age=600"], body: "got \(request.path)")
            }
        }
        defer { origin.stop() }
        let fixture = try CacheFixture()
        let session = fixture.session()
        let url = origin.url("/item")
        _ = try await load(session, Request(url: url))

        let (posted, postedBody) = try await load(session, Request(method: .post, url: url, body: .bytes(ByteBuffer(string: "x"))))
        #expect(postedBody == "posted x")
        #expect(posted.cacheOutcome?.stored == true)
        let (hit, body) = try await load(session, Request(url: url))
        #expect(body == "posted x")
        #expect(hit.cacheOutcome?.cacheStatus() == "tollgate; hit")

        let other = origin.url("/other")
        _ = try await load(session, Request(method: .post, url: other, body: .bytes(ByteBuffer(string: "y"))))
        let (_, otherBody) = try await load(session, Request(url: other))
        #expect(otherBody == "got /other")
        #expect(origin.requests.filter { $0.method == "GET" }.count == 2)
    }
}
