import Foundation
import Testing
import TollgateHTTP
import TollgateProxy
import TollgateTesting

/// `PURGE` from `access.purge-clients`: answered by the proxy from its cache, never forwarded.
@Suite(
    "PURGE: a client in access.purge-clients removes what the proxy stored",
    .serialized,
    .timeLimit(.minutes(1)),
    .enabled(if: tollgateBinary != nil && executableOnPath("curl") != nil)
)
struct PurgeMethodTests {
    @Test("A URL, a URL* prefix and a tag are purged over HTTP/1.1 and HTTP/2; another client is refused; no PURGE reaches the origin")
    func purges() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try await LoopbackOrigin.start { request, respond in
            let tag = request.target.hasPrefix("/b") ? "news" : "other"
            respond.send(status: 200, headers: ["Cache-Control": "max-age=600", "Surrogate-Key": tag], body: "at \(request.target)")
        }
        defer { origin.stop() }
        let config = directory.appendingPathComponent("tollgate.yaml")
        try """
        listen:
          - address: "127.0.0.1:0"
            mode: reverse
            upstream: "http://127.0.0.1:\(origin.port)"
            h2c: true
        cache:
          path: "\(directory.appendingPathComponent("cache").path)"
          tag-header: Surrogate-Key
        access:
          purge-clients: ["127.0.0.1/32"]
        """.write(to: config, atomically: true, encoding: .utf8)
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 1)
        defer { served.child.kill() }
        let port = try served.port("reverse")
        func status(_ path: String) async throws -> String? {
            try await request("GET \(path) HTTP/1.1\r\nHost: site.test\r\n\r\n", port: port).header("Cache-Status")
        }
        func purge(_ path: String, _ options: [String] = []) async throws -> (status: Int, body: String, error: String?) {
            let response = try await ChildProcess.run(
                "/usr/bin/curl", ["-s", "-i", "-X", "PURGE"] + options + ["http://127.0.0.1:\(port)\(path)"]
            )
            let parsed = try #require(RawResponse.parseAll(Array(response.stdout.utf8)).responses.first, "\(response.stdout)")
            return (parsed.status, parsed.bodyText, parsed.header("Tollgate-Error"))
        }
        let paths = ["/a", "/b1", "/b2", "/dir/x", "/dir/y", "/dir-other/z"]
        for path in paths { _ = try await status(path) }
        for path in paths { #expect(try await status(path) == "tollgate; hit", "\(path)") }

        let one = try await purge("/a")
        #expect(one.status == 200)
        #expect(one.body == "purged 1\n")
        #expect(try await status("/a") == "tollgate; fwd=uri-miss; stored")
        #expect(try await purge("/nothing-here").status == 404)
        // Every URL under /dir/, over HTTP/2.
        let prefix = try await purge("/dir/*", ["--http2-prior-knowledge"])
        #expect(prefix.status == 200)
        #expect(prefix.body == "purged 2\n")
        #expect(try await status("/dir/x") == "tollgate; fwd=uri-miss; stored")
        #expect(try await status("/dir-other/z") == "tollgate; hit")
        // By tag: the request carries the tag field, as the origin writes it.
        let tagged = try await purge("/", ["-H", "Surrogate-Key: news"])
        #expect(tagged.body == "purged 2\n")
        #expect(try await status("/b1") == "tollgate; fwd=uri-miss; stored")

        // Another loopback address is a client (access.clients) but not a purger.
        let refused = try await purge("/a", ["--interface", "127.0.0.2"])
        #expect(refused.status == 403)
        #expect(refused.error == "purge-refused")
        #expect(try await status("/a") == "tollgate; hit")
        #expect(origin.requests.allSatisfy { $0.method == "GET" }, "\(origin.requests.map(\.method))")
    }

    @Test("Without access.purge-clients a PURGE is a method like any other: forwarded, nothing removed")
    func forwardedWithoutPurgers() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, body: "origin got \(request.method)")
        }
        defer { origin.stop() }
        try await withProxy { proxy in
            let response = try await request("PURGE http://127.0.0.1:\(origin.port)/a HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: proxy.port)
            #expect(response.status == 200)
            #expect(response.bodyText == "origin got PURGE")
        }
    }
}
