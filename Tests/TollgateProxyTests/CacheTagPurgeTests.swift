import Foundation
import Testing
import TollgateHTTP
import TollgateTesting

@Suite(
    "Purging by tag: cache.tag-header (the built executable)",
    .serialized,
    .timeLimit(.minutes(1)),
    .enabled(if: tollgateBinary != nil)
)
struct CacheTagPurgeTests {
    @Test("The tags are kept in the cache, not sent to clients; /cache/purge?tag= and tollgate cache purge --tag remove what names a tag")
    func purgeByTag() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let tags = ["/p/1": "product-1 list", "/p/2": "product-2 list", "/about": "about"]
        let origin = try await LoopbackOrigin.start { request, respond in
            respond.send(
                status: 200, headers: ["Cache-Control": "max-age=600", "Surrogate-Key": tags[request.target] ?? ""], body: "at \(request.target)"
            )
        }
        defer { origin.stop() }
        let config = try writeReverseCacheConfiguration(
            in: directory, upstreamPort: origin.port, cacheLines: ["tag-header: Surrogate-Key"], more: "admin:\n  address: \"127.0.0.1:0\"\n"
        )
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 2)
        defer { served.child.kill() }
        let proxy = try served.port("reverse")
        let admin = try served.port("admin")
        func fetch(_ path: String) async throws -> RawResponse {
            try await request("GET \(path) HTTP/1.1\r\nHost: shop.test\r\n\r\n", port: proxy)
        }
        func status(_ path: String) async throws -> String? { try await fetch(path).header("Cache-Status") }
        func purge(_ query: String) async throws -> RawResponse {
            try await request("POST /cache/purge?\(query) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n", port: admin)
        }

        for path in ["/p/1", "/p/2", "/about"] {
            let miss = try await fetch(path)
            #expect(miss.header("Cache-Status") == "tollgate; fwd=uri-miss; stored", "\(path)")
            #expect(miss.header("Surrogate-Key") == nil, "the tags are the cache's: \(miss.headers)")
            let hit = try await fetch(path)
            #expect(hit.header("Cache-Status") == "tollgate; hit", "\(path)")
            #expect(hit.header("Surrogate-Key") == nil, "\(hit.headers)")
            #expect(hit.bodyText == "at \(path)")
        }

        let one = try await purge("tag=product-1")
        #expect(one.status == 200)
        #expect(one.bodyText == "purged 1\n")
        #expect(try await status("/p/1") == "tollgate; fwd=uri-miss; stored")
        #expect(try await status("/p/2") == "tollgate; hit")
        // Several tags at once, separated as the field separates them.
        #expect(try await purge("tag=product-2%20nothing").bodyText == "purged 1\n")
        #expect(try await status("/p/2") == "tollgate; fwd=uri-miss; stored")
        #expect(try await purge("tag=").status == 400)

        // The command line does the same, from the same configuration.
        let binary = try #require(tollgateBinary)
        let cli = try await ChildProcess.run(binary, ["cache", "purge", "--config", config.path, "--tag", "list"])
        #expect(cli.status == 0, "\(cli.stderr)")
        #expect(cli.stdout == "purged 2\n")
        #expect(try await status("/p/1") == "tollgate; fwd=uri-miss; stored")
        #expect(try await status("/about") == "tollgate; hit")
        #expect(origin.requestCount == 6)

        // Without tag-header there are no tags to purge by.
        let untaggedDirectory = directory.appendingPathComponent("untagged")
        try FileManager.default.createDirectory(at: untaggedDirectory, withIntermediateDirectories: true)
        let untagged = try writeForwardCacheConfiguration(in: untaggedDirectory)
        let refused = try await ChildProcess.run(binary, ["cache", "purge", "--config", untagged.path, "--tag", "list"])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("purging by tag needs cache.tag-header"), "\(refused.stderr)")
        let both = try await ChildProcess.run(binary, ["cache", "purge", "--config", config.path, "--tag", "list", "https://shop.test/p/1"])
        #expect(both.status != 0)
    }
}
