import Foundation
import Testing
import TollgateHTTP
import TollgateTesting

@Suite(
    "Location, Refresh and Set-Cookie written back for the client's URL behind map-remote and reverse listeners (the built executable)",
    .serialized,
    .timeLimit(.minutes(1)),
    .enabled(if: tollgateBinary != nil && FileManager.default.isExecutableFile(atPath: "/usr/bin/curl"))
)
struct ClientFacingReferencesTests {
    @Test("curl -L through a map-remote follows the mapped origin's redirect on the client's URL, and keeps its cookie for the client's host")
    func mapRemoteRedirectAndCookie() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let development = try await LoopbackOrigin.start { request, respond in
            switch request.target {
            case "/v2/old":
                respond.send(
                    status: 302,
                    headers: [
                        "Location": "http://\(request.headerFields["Host"] ?? "")/v2/new?from=old",
                        "Set-Cookie": "sid=abc; Domain=127.0.0.1; Path=/v2/",
                    ],
                    body: ""
                )
            default:
                respond.send(status: 200, headers: [:], body: "development \(request.target) cookie=\(request.headerFields["Cookie"] ?? "none")")
            }
        }
        defer { development.stop() }
        let config = try writeForwardCacheConfiguration(
            in: directory,
            more: """
                hosts:
                  - match: shop.test
                    map-remote:
                      - { path: /api/, to: "http://127.0.0.1:\(development.port)/v2/" }
                """
        )
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 1)
        defer { served.child.kill() }
        let jar = directory.appendingPathComponent("cookies.txt").path
        let fetched = try await ChildProcess.run(
            "/usr/bin/curl",
            [
                "-sS", "-L", "--max-time", "20", "-x", "http://127.0.0.1:\(try served.port("forward"))",
                "-c", jar, "-b", jar, "-w", "\n%{url_effective}", "http://shop.test/api/old",
            ]
        )
        #expect(fetched.status == 0, "curl: \(fetched.stderr)")
        // The redirect was followed on the client's URL (through the mapping again), not to the
        // development server's own address, and the cookie came back with it.
        #expect(fetched.stdout == "development /v2/new?from=old cookie=sid=abc\nhttp://shop.test/api/new?from=old", "\(fetched.stdout)")
        let cookies = try String(contentsOfFile: jar, encoding: .utf8)
        let line = try #require(cookies.split(separator: "\n").first { $0.hasSuffix("\tsid\tabc") }, "\(cookies)")
        #expect(line.split(separator: "\t").prefix(3) == ["shop.test", "FALSE", "/api/"], "\(line)")
    }

    @Test("A reverse listener writes its upstream's absolute redirects for each client's Host; the stored copy keeps the origin's, and a hit is written again")
    func reverseListenerLocations() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let upstream = try await LoopbackOrigin.start { request, respond in
            switch request.target {
            case "/moved":
                respond.send(
                    status: 301,
                    headers: ["Location": "http://\(request.headerFields["Host"] ?? "")/landing#top", "Cache-Control": "max-age=600"],
                    body: ""
                )
            case "/refresh":
                respond.send(status: 200, headers: ["Refresh": "3; URL='http://\(request.headerFields["Host"] ?? "")/next'"], body: "wait")
            default:
                respond.send(status: 302, headers: ["Location": "https://elsewhere.example/"], body: "")
            }
        }
        defer { upstream.stop() }
        let config = try writeReverseCacheConfiguration(in: directory, upstreamPort: upstream.port)
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 1)
        defer { served.child.kill() }
        let port = try served.port("reverse")
        func get(_ path: String, host: String) async throws -> RawResponse {
            try await request("GET \(path) HTTP/1.1\r\nHost: \(host)\r\n\r\n", port: port)
        }
        let first = try await get("/moved", host: "a.example:8080")
        #expect(first.status == 301)
        #expect(first.header("Location") == "http://a.example:8080/landing#top")
        // The stored copy keeps the upstream's Location: the hit is written again.
        let hit = try await get("/moved", host: "a.example:8080")
        #expect(hit.header("Cache-Status") == "tollgate; hit")
        #expect(hit.header("Location") == "http://a.example:8080/landing#top")
        // Another Host is stored apart (the X-Forwarded-Host it is told) and written for it.
        let other = try await get("/moved", host: "b.example")
        #expect(other.header("Location") == "http://b.example/landing#top")
        #expect(upstream.requestCount == 2)
        // Refresh's URL too, as nginx does.
        #expect(try await get("/refresh", host: "a.example").header("Refresh") == "3; URL='http://a.example/next'")
        // A redirect elsewhere is the origin's to give.
        #expect(try await get("/away", host: "a.example").header("Location") == "https://elsewhere.example/")
    }
}
