import Foundation
import Testing
import TollgateHTTP
import TollgateTesting

@Suite(
    "hosts[].map-remote: a path of one host served by another URL (the built executable)",
    .serialized,
    .timeLimit(.minutes(1)),
    .enabled(if: tollgateBinary != nil)
)
struct MapRemoteProxyTests {
    @Test("Requests under the path go to the mapped URL with its Host, are cached under it and purged by it; the rule's map-local answers first; the rest of the host is untouched")
    func mapsAPath() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let production = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, headers: ["Cache-Control": "max-age=600"], body: "production \(request.target)")
        }
        defer { production.stop() }
        let development = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, headers: ["Cache-Control": "max-age=600"], body: "development \(request.target) for \(request.headerFields["Host"] ?? "?")")
        }
        defer { development.stop() }
        let flags = directory.appendingPathComponent("flags.json")
        try Data("{\"beta\": true}".utf8).write(to: flags)
        let config = try writeForwardCacheConfiguration(
            in: directory,
            more: """
                access:
                  purge-clients: ["127.0.0.1/32"]
                hosts:
                  - match: shop.test
                    connect-to: "127.0.0.1:\(production.port)"
                    map-local:
                      - { path: /api/flags.json, file: "\(flags.path)" }
                    map-remote:
                      - { path: /api/, to: "http://127.0.0.1:\(development.port)/v2/" }
                """
        )
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 1)
        defer { served.child.kill() }
        let proxy = try served.port("forward")
        func get(_ target: String, method: String = "GET") async throws -> RawResponse {
            try await request("\(method) \(target) HTTP/1.1\r\nHost: shop.test\r\n\r\n", port: proxy)
        }

        let page = try await get("http://shop.test/index.html")
        #expect(page.bodyText == "production /index.html")
        let api = try await get("http://shop.test/api/items?page=2")
        #expect(api.bodyText == "development /v2/items?page=2 for 127.0.0.1:\(development.port)")
        #expect(api.header("Cache-Status") == "tollgate; fwd=uri-miss; stored")
        #expect(try await get("http://shop.test/api/items?page=2").header("Cache-Status") == "tollgate; hit")
        #expect(try await get("http://shop.test/apiary").bodyText == "production /apiary")
        // The rule's map-local answers first, before map-remote sends the path away.
        #expect(try await get("http://shop.test/api/flags.json").bodyText == "{\"beta\": true}")
        #expect(development.requestCount == 1)
        #expect(production.requestCount == 2)
        // Stored under the URL it went to: purging the mapped path purges that.
        #expect(try await get("http://shop.test/api/items?page=2", method: "PURGE").bodyText == "purged 1\n")
        #expect(try await get("http://shop.test/api/items?page=2").header("Cache-Status") == "tollgate; fwd=uri-miss; stored")
        #expect(development.requestCount == 2)
    }
}
