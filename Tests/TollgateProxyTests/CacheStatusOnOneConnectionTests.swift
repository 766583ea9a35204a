import Foundation
import Testing
import TollgateHTTP
import TollgateTesting

/// A client connection remembers the last `Cache-Status` value it wrote and the outcome it
/// described: each response on one kept-alive connection must still say what happened to it.
@Suite(
    "Cache-Status on one kept-alive connection (the built executable)",
    .timeLimit(.minutes(1)),
    .enabled(if: tollgateBinary != nil)
)
struct CacheStatusOnOneConnectionTests {
    @Test("Misses, hits and uncacheable responses in turn each get their own Cache-Status")
    func eachResponseItsOwn() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try await LoopbackOrigin.start { request, respond in
            if request.path.hasPrefix("/private") {
                respond.send(status: 200, headers: ["Cache-Control": "no-store"], body: "fresh \(request.path)")
            } else {
                respond.send(status: 200, headers: ["Cache-Control": "max-age=600"], body: "kept \(request.path)")
            }
        }
        defer { origin.stop() }
        let config = try writeForwardCacheConfiguration(in: directory)
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 1)
        defer { served.child.kill() }
        let client = try await RawClient.connect(port: try served.port("forward"))
        defer { client.close() }
        let base = "http://127.0.0.1:\(origin.port)"
        let steps: [(path: String, status: String)] = [
            ("/a", "tollgate; fwd=uri-miss; stored"),
            ("/a", "tollgate; hit"),
            ("/private", "tollgate; fwd=uri-miss; detail=\"no-store\""),
            ("/private", "tollgate; fwd=uri-miss; detail=\"no-store\""),
            ("/a", "tollgate; hit"),
            ("/b", "tollgate; fwd=uri-miss; stored"),
            ("/private2", "tollgate; fwd=uri-miss; detail=\"no-store\""),
            ("/b", "tollgate; hit"),
        ]
        for (index, step) in steps.enumerated() {
            try await client.send("GET \(base)\(step.path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            let response = try #require(try await client.waitForResponses(index + 1).last)
            #expect(response.header("Cache-Status") == step.status, "request \(index + 1): \(step.path)")
            #expect(response.bodyText.hasSuffix(step.path))
        }
        #expect(!client.isClosed)
    }
}
