import Foundation
import Testing
import TollgateHTTP
import TollgateTesting

@Suite(
    "Purging under a rule's cache.key (the built executable)",
    .serialized,
    .timeLimit(.minutes(1)),
    .enabled(if: tollgateBinary != nil)
)
struct CachePurgeTests {
    @Test("/cache/purge and tollgate cache purge find the entry stored under the normalized URL")
    func purgeNormalizedURL() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, headers: ["Cache-Control": "max-age=600"], body: "signed \(request.target)")
        }
        defer { origin.stop() }
        let config = directory.appendingPathComponent("tollgate.yaml")
        try """
        listen:
          - address: "127.0.0.1:0"
        admin:
          address: "127.0.0.1:0"
        cache:
          path: "\(directory.appendingPathComponent("cache").path)"
        hosts:
          - match: "127.0.0.1"
            cache:
              key:
                drop-query: [sig]
        """.write(to: config, atomically: true, encoding: .utf8)
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 2)
        defer { served.child.kill() }
        let proxy = try served.port("forward")
        let admin = try served.port("admin")
        let base = "http://127.0.0.1:\(origin.port)/file"

        func fetch(_ sig: Int) async throws -> RawResponse {
            try await request("GET \(base)?sig=\(sig) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: proxy)
        }
        #expect(try await fetch(1).header("Cache-Status") == "tollgate; fwd=uri-miss; stored")
        #expect(try await fetch(2).header("Cache-Status") == "tollgate; hit")
        // Purged by any signature: the stored URL has none.
        let purge = try await request(
            "POST /cache/purge?url=\(base)%3Fsig%3D3 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n",
            port: admin
        )
        #expect(purge.bodyText == "purged 1\n")
        #expect(try await fetch(4).header("Cache-Status") == "tollgate; fwd=uri-miss; stored")

        // The command line does the same, from the same configuration.
        let binary = try #require(tollgateBinary)
        let cli = try await ChildProcess.run(binary, ["cache", "purge", "--config", config.path, "\(base)?sig=5"])
        #expect(cli.status == 0, "\(cli.stderr)")
        #expect(cli.stdout == "purged 1\n")
        #expect(origin.requestCount == 2)
    }

    @Test("URL* purges every URL under the prefix, through /cache/purge and tollgate cache purge; a prefix without a path is refused")
    func purgePrefix() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, headers: ["Cache-Control": "max-age=600"], body: "at \(request.target)")
        }
        defer { origin.stop() }
        let config = try writeForwardCacheConfiguration(in: directory, more: "admin:\n  address: \"127.0.0.1:0\"\n")
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 2)
        defer { served.child.kill() }
        let proxy = try served.port("forward")
        let admin = try served.port("admin")
        let base = "http://127.0.0.1:\(origin.port)"
        func status(_ path: String) async throws -> String? {
            try await request("GET \(base)\(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: proxy).header("Cache-Status")
        }
        for path in ["/snap/a", "/snap/b?x=1", "/snap-old/c", "/rel/d"] { _ = try await status(path) }
        for path in ["/snap/a", "/snap/b?x=1", "/snap-old/c", "/rel/d"] { #expect(try await status(path) == "tollgate; hit", "\(path)") }

        let purge = try await request(
            "POST /cache/purge?url=\(base)/snap/* HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n", port: admin
        )
        #expect(purge.status == 200)
        #expect(purge.bodyText == "purged 2\n")
        #expect(try await status("/snap/a") == "tollgate; fwd=uri-miss; stored")
        #expect(try await status("/snap-old/c") == "tollgate; hit")

        let refused = try await request(
            "POST /cache/purge?url=\(base)* HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n", port: admin
        )
        #expect(refused.status == 400, "\(refused.bodyText)")

        let binary = try #require(tollgateBinary)
        let cli = try await ChildProcess.run(binary, ["cache", "purge", "--config", config.path, "\(base)/snap*"])
        #expect(cli.status == 0, "\(cli.stderr)")
        #expect(cli.stdout == "purged 2\n", "/snap/a stored again, and /snap-old/c")
        #expect(try await status("/rel/d") == "tollgate; hit")
        let bad = try await ChildProcess.run(binary, ["cache", "purge", "--config", config.path, "127.0.0.1/*"])
        #expect(bad.status == 1)
        #expect(bad.stderr.contains("absolute http(s) URL"), "\(bad.stderr)")
    }
}
