import Foundation
import Testing
import TollgateHTTP
import TollgateTesting

/// 1xx responses from the origin through a caching reverse listener (RFC 9110 §15.2, RFC 9111 §3:
/// a cache never stores an interim response), through the built executable.
@Suite(
    "Interim responses: 102 and 103 relayed before the final response, never stored or merged into it",
    .serialized,
    .timeLimit(.minutes(1)),
    .enabled(if: tollgateBinary != nil)
)
struct InterimResponseTests {
    /// An origin that sends 100 (unasked), 102 and 103 before a cacheable 200.
    private func hintingOrigin() async throws -> LoopbackOrigin {
        try await LoopbackOrigin.start { _, respond in
            respond.write(
                "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\n"
                    + "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\nConnection: x-secret\r\nX-Secret: 1\r\n\r\n"
            )
            respond.send(status: 200, headers: ["Cache-Control": "max-age=600"], body: "final")
        }
    }

    /// Runs `body` with a client connected to `tollgate serve` (a caching reverse listener in front
    /// of ``hintingOrigin()``), all stopped and removed afterwards.
    private func withClient(_ body: (RawClient, LoopbackOrigin) async throws -> Void) async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try await hintingOrigin()
        defer { origin.stop() }
        let config = try writeReverseCacheConfiguration(in: directory, upstreamPort: origin.port)
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 1)
        defer { served.child.kill() }
        let client = try await RawClient.connect(port: try served.port("reverse"))
        defer { client.close() }
        try await body(client, origin)
    }

    @Test(
        "An HTTP/1.1 client gets the 102 and the 103 (less hop-by-hop fields), then the 200; the hit that follows sends none"
    )
    func relayedNotStored() async throws {
        try await withClient { client, origin in
            try await client.send("GET /page HTTP/1.1\r\nHost: x\r\n\r\n")
            let first = try await client.waitForResponses(3)
            #expect(first.map(\.status) == [102, 103, 200])
            #expect(first[1].header("Link") == "</style.css>; rel=preload")
            #expect(first[1].header("X-Secret") == nil && first[1].header("Connection") == nil)
            #expect(first[2].header("Link") == nil)
            #expect(first[2].header("Cache-Status") == "tollgate; fwd=uri-miss; stored")
            #expect(first[2].bodyText == "final")

            // The stored response is the final one alone: no interim response and none of its fields.
            try await client.send("GET /page HTTP/1.1\r\nHost: x\r\n\r\n")
            let all = try await client.waitForResponses(4)
            #expect(all[3].status == 200)
            #expect(all[3].header("Cache-Status") == "tollgate; hit")
            #expect(all[3].header("Link") == nil)
            #expect(origin.requestCount == 1)
        }
    }

    @Test("An HTTP/1.0 client is sent no 1xx at all")
    func noneForHTTP10() async throws {
        try await withClient { client, _ in
            try await client.send("GET /old HTTP/1.0\r\nHost: x\r\n\r\n")
            try await client.waitForClose()
            #expect(client.responses.map(\.status) == [200])
            #expect(client.responses.first?.bodyText == "final")
        }
    }
}
