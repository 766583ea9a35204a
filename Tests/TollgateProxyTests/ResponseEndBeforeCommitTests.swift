import Dispatch
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
import TollgateCache
import TollgateHTTP
import TollgatePolicy
import TollgateProxy
import TollgateSession
import TollgateTesting

/// A stored miss's response ends at the client when its body has arrived, not when the cache
/// entry is committed (`BodyEndReceiving`): the commit's fsyncs held every stored miss's last
/// chunk, and the next request on the connection, for as long as the disk took.
@Suite("The response's end before the commit", .serialized, .timeLimit(.minutes(1)))
struct ResponseEndBeforeCommitTests {
    @Test("A stored miss reaches its client whole, and the connection's next request is served, while the commit cannot run; a request for the same URL then waits for the commit and is a hit")
    func responseEndsBeforeCommit() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in
            if request.path == "/item" {
                // Chunked: the client can tell the body's end only from the proxy's last chunk.
                respond.sendHead(status: 200, headers: ["Cache-Control": "max-age=600", "Transfer-Encoding": "chunked"])
                respond.writeChunk("stored ")
                respond.writeChunk("body")
                respond.endChunked()
            } else {
                respond.send(status: 200, headers: ["Cache-Control": "no-store"], body: "other")
            }
        }
        defer { origin.stop() }
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // One storage thread, held by the test: no commit can run until it lets go.
        let storage = NIOThreadPool(numberOfThreads: 1)
        storage.start()
        let store = try CacheStore(options: CacheStoreOptions(path: directory.path, maxSize: 64 << 20))
        defer { store.close() }
        var configuration = ProxyServer.defaultSessionConfiguration
        configuration.responseCache = ResponseCache(store: store, threadPool: storage)
        let session = Session(configuration: configuration)
        defer { session.invalidateAndCancel() }
        let log = NIOLockedValueBox<[String]>([])
        let server = try await ProxyServer.start(
            .init(
                listen: ListenAddress(host: "127.0.0.1", port: 0),
                accessLog: AccessLog(format: .json) { line in log.withLockedValue { $0.append(line) } }
            ),
            policy: StaticProxyPolicy(session: session)
        )
        let gate = DispatchSemaphore(value: 0)
        let held = storage.runIfActive(eventLoop: MultiThreadedEventLoopGroup.singleton.next()) { gate.wait() }
        var released = false
        var releasedAt: ContinuousClock.Instant?
        func release() {
            if !released {
                releasedAt = ContinuousClock.now
                gate.signal()
            }
            released = true
        }
        do {
            let client = try await RawClient.connect(port: server.boundAddress.port)
            defer { client.close() }
            let item = "GET \(origin.url("/item")) HTTP/1.1\r\nHost: 127.0.0.1:\(origin.port)\r\n\r\n"
            let other = "GET \(origin.url("/other")) HTTP/1.1\r\nHost: 127.0.0.1:\(origin.port)\r\n\r\n"

            let sentAt = ContinuousClock.now
            try await client.send(item)
            let first = try #require(try await client.waitForResponses(1, timeout: .seconds(5)).first)
            #expect(first.status == 200)
            #expect(first.bodyText == "stored body")
            #expect(first.header("Cache-Status")?.contains("stored") == true)
            #expect(log.withLockedValue { $0 }.isEmpty, "the line waits for the commit, to say whether it stored")

            try await client.send(other)
            let second = try await client.waitForResponses(2, timeout: .seconds(5))
            #expect(second.last?.bodyText == "other")

            // The same URL again while the entry is not committed: it waits for the commit, then
            // is served from it (not sent to the origin a second time).
            try await client.send(item)
            try await Task.sleep(for: .milliseconds(300))
            release()
            let third = try #require(try await client.waitForResponses(3, timeout: .seconds(5)).last)
            #expect(third.bodyText == "stored body")
            #expect(third.header("Cache-Status")?.hasPrefix("tollgate; hit") == true, "\(third.header("Cache-Status") ?? "-")")
            #expect(origin.requests.filter { $0.path == "/item" }.count == 1)

            try await eventually("three log lines") { log.withLockedValue { $0 }.count == 3 }
            let lines = try log.withLockedValue { $0 }.map { line in
                try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            }
            let stored = try #require(lines.first { ($0["target"] as? String)?.hasSuffix("/item") == true && $0["cache"] as? String == "miss" })
            #expect(stored["stored"] as? Bool == true)
            // Measured to the response's end, which came before the storage thread was let go
            // (not a fixed bound: under a sanitizer the first exchange alone took 413 ms).
            let heldFor = try #require(releasedAt) - sentAt
            let heldMilliseconds = Int(heldFor.components.seconds * 1000 + heldFor.components.attoseconds / 1_000_000_000_000_000)
            #expect((stored["duration_ms"] as? Int ?? .max) < heldMilliseconds, "held for \(heldMilliseconds) ms")
        } catch {
            release()
            try? await held.get()
            await server.shutdown(gracePeriod: .seconds(1))
            try? await storage.shutdownGracefully()
            throw error
        }
        release()
        try await held.get()
        await server.shutdown(gracePeriod: .seconds(1))
        try await storage.shutdownGracefully()
    }
}
