import Foundation
import Testing
import TollgateHTTP
import TollgatePolicy
import TollgateTesting

@testable import TollgateProxy

@Suite("Stored body files: sendfile, or read and written for large bodies to loopback clients")
struct StoredBodyTransferTests {
    @Test("The rule: loopback clients get bodies over 1 MiB through the read path; everything else by sendfile")
    func rule() {
        let limit = StoredBodyTransfer.loopbackSendfileLimit
        #expect(StoredBodyTransfer.usesSendfile(length: limit, clientIsLoopback: true))
        #expect(!StoredBodyTransfer.usesSendfile(length: limit + 1, clientIsLoopback: true))
        #expect(StoredBodyTransfer.usesSendfile(length: 8 << 20, clientIsLoopback: false))
        #expect(CIDR.isLoopback([127, 0, 0, 1]))
        #expect(CIDR.isLoopback([127, 9, 8, 7]))
        #expect(CIDR.isLoopback([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]))
        #expect(CIDR.isLoopback([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 127, 0, 0, 1]))
        #expect(!CIDR.isLoopback([10, 0, 0, 1]))
        #expect(!CIDR.isLoopback([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]))
    }

    @Test(
        "Hits of a body file under and over the limit reach a loopback client byte for byte, several on one connection",
        .timeLimit(.minutes(1)),
        .enabled(if: tollgateBinary != nil)
    )
    func bothPathsIntact() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let small = (0..<(300 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 1) }
        let large = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ ($0 >> 16)) }
        let origin = try await LoopbackOrigin.start { request, respond in
            respond.send(
                status: 200,
                headers: ["Cache-Control": "max-age=600"],
                bytes: request.target == "/large" ? large : small
            )
        }
        defer { origin.stop() }
        let config = try writeReverseCacheConfiguration(
            in: directory, upstreamPort: origin.port, cacheLines: ["max-size: 256MiB"], more: "log:\n  access: \"off\""
        )
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 1)
        defer { served.child.kill() }
        let port = try served.port("reverse")
        for path in ["/small", "/large"] {
            let stored = try await request("GET \(path) HTTP/1.1\r\nHost: a\r\n\r\n", port: port)
            #expect(stored.header("Cache-Status") == "tollgate; fwd=uri-miss; stored")
        }
        // Three hits of each, alternating, on one keep-alive connection: each body must end
        // exactly where its length says, or the next response would not parse.
        let client = try await RawClient.connect(host: "127.0.0.1", port: port)
        defer { client.close() }
        let paths = ["/large", "/small", "/large", "/small", "/large", "/small"]
        try await client.send(paths.map { "GET \($0) HTTP/1.1\r\nHost: a\r\n\r\n" }.joined())
        let hits = try await client.waitForResponses(paths.count)
        #expect(hits.count == paths.count)
        for (path, hit) in zip(paths, hits) {
            #expect(hit.header("Cache-Status") == "tollgate; hit")
            #expect(hit.body == (path == "/large" ? large : small), "\(path): \(hit.body.count) bytes")
        }
        #expect(origin.requestCount == 2)
    }
}
