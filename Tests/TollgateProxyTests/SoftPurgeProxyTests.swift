import Foundation
import Testing
import TollgateHTTP
import TollgateTesting

@Suite(
    "Soft purges through the built proxy: the admin API's soft=1, PURGE with Fastly-Soft-Purge, cache purge --soft",
    .serialized,
    .timeLimit(.minutes(1)),
    .enabled(if: tollgateBinary != nil)
)
struct SoftPurgeProxyTests {
    @Test("A soft-purged response is revalidated (a 304 keeps its body), or served stale while it is when stale-while-revalidate allows")
    func softPurges() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try await LoopbackOrigin.start { request, respond in
            let control = request.target == "/swr" ? "max-age=600, stale-while-revalidate=60" : "max-age=600"
            if request.headerFields["If-None-Match"] == "\"v1\"" {
                respond.send(status: 304, headers: ["Cache-Control": control, "ETag": "\"v1\""])
            } else {
                respond.send(status: 200, headers: ["Cache-Control": control, "ETag": "\"v1\"", "Surrogate-Key": "all"], body: "at \(request.target)")
            }
        }
        defer { origin.stop() }
        let config = try writeReverseCacheConfiguration(
            in: directory, upstreamPort: origin.port, cacheLines: ["tag-header: Surrogate-Key"],
            more: "admin:\n  address: \"127.0.0.1:0\"\naccess:\n  purge-clients: [\"127.0.0.1/32\"]\n"
        )
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 2)
        defer { served.child.kill() }
        let proxy = try served.port("reverse")
        let admin = try served.port("admin")
        func get(_ path: String, _ extra: String = "", method: String = "GET") async throws -> RawResponse {
            try await request("\(method) \(path) HTTP/1.1\r\nHost: shop.test\r\n\(extra)\r\n", port: proxy)
        }
        func conditionals() -> Int { origin.requests.filter { $0.headerFields["If-None-Match"] != nil }.count }
        for path in ["/plain", "/swr"] {
            _ = try await get(path)
            #expect(try await get(path).header("Cache-Status") == "tollgate; hit")
        }

        // The admin API: marked stale, then the next request asks the origin (a 304) and gets the stored body.
        let marked = try await request(
            "POST /cache/purge?url=http://127.0.0.1:\(origin.port)/plain&soft=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n", port: admin
        )
        #expect(marked.bodyText == "marked stale 1\n")
        let revalidated = try await get("/plain")
        #expect(revalidated.status == 200)
        #expect(revalidated.bodyText == "at /plain")
        #expect(conditionals() == 1)
        #expect(try await get("/plain").header("Cache-Status") == "tollgate; hit", "fresh again after the 304")

        // PURGE with Fastly's header, on a response stale-while-revalidate covers: served at once,
        // the origin asked behind it.
        let purged = try await get("/swr", "Fastly-Soft-Purge: 1\r\n", method: "PURGE")
        #expect(purged.status == 200)
        #expect(purged.bodyText == "marked stale 1\n")
        let stale = try await get("/swr")
        #expect(stale.bodyText == "at /swr")
        try await eventually("the background revalidation") { conditionals() == 2 }
        #expect(origin.requestCount == 4, "nothing fetched whole again")

        // The command line, by tag.
        let binary = try #require(tollgateBinary)
        let cli = try await ChildProcess.run(binary, ["cache", "purge", "--config", config.path, "--tag", "all", "--soft"])
        #expect(cli.status == 0, "\(cli.stderr)")
        #expect(cli.stdout == "marked stale 2\n")
        #expect(try await get("/plain").bodyText == "at /plain")
        #expect(conditionals() == 3)
    }
}
