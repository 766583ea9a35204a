import Foundation
import Testing
import TollgateCache
import TollgateHTTP
import TollgateTesting

@Suite(
    "tollgate warm (the built executable)",
    .serialized,
    .timeLimit(.minutes(1)),
    .enabled(if: tollgateBinary != nil)
)
struct WarmCommandTests {
    /// `DIRECTORY/tollgate.yaml`: a forward listener, every destination allowed (the origins are
    /// on loopback), the cache in `DIRECTORY/cache`.
    static func writeConfiguration(in directory: URL) throws -> URL {
        let config = directory.appendingPathComponent("tollgate.yaml")
        try """
        listen:
          - address: "127.0.0.1:0"
        access:
          destinations:
            - { allow: all }
        cache:
          path: "\(directory.appendingPathComponent("cache").path)"
        """.write(to: config, atomically: true, encoding: .utf8)
        return config
    }

    @Test("warm stores what it can, reports each URL and bad line, and the proxy then serves them offline")
    func warmThenServeOffline() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try await LoopbackOrigin.start { request, respond in
            switch request.path {
            case "/private": respond.send(status: 200, headers: ["Cache-Control": "no-store"], body: "secret")
            case "/missing": respond.send(status: 404, body: "no")
            default: respond.send(status: 200, headers: ["Cache-Control": "max-age=600"], body: "artifact \(request.path)")
            }
        }
        let config = try Self.writeConfiguration(in: directory)
        let base = "http://127.0.0.1:\(origin.port)"
        let list = directory.appendingPathComponent("urls.txt")
        try """
        # what the build needs
        \(base)/a.tar.gz
        \(base)/b.tar.gz

        \(base)/private
        \(base)/missing
        not a url
        """.write(to: list, atomically: true, encoding: .utf8)
        let binary = try #require(tollgateBinary)
        let environment = ["XDG_DATA_HOME": directory.appendingPathComponent("data").path]

        let first = try await ChildProcess.run(
            binary, ["warm", "--config", config.path, "--concurrency", "2", list.path], environment: environment
        )
        #expect(first.status == 1, "\(first.stdout) \(first.stderr)")
        let lines = first.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 5, "\(first.stdout)")
        #expect(lines.first == "200  tollgate; fwd=uri-miss; stored  \(base)/a.tar.gz")
        #expect(lines.contains("200  tollgate; fwd=uri-miss; stored  \(base)/b.tar.gz"))
        #expect(lines.contains("200  tollgate; fwd=uri-miss; detail=\"no-store\"  \(base)/private"))
        #expect(lines.contains { $0.hasPrefix("404  ") && $0.hasSuffix("\(base)/missing") })
        #expect(lines.last == "warmed 2 of 4 URLs: 2 stored, 0 already fresh, 2 not stored, 0 failed, 0 resumed; 1 lines skipped")
        #expect(first.stderr.contains("urls.txt:7: not a URL: 'not a url'"), "\(first.stderr)")
        #expect(origin.requestCount == 4)

        // Warm again from standard input: both artifacts are already fresh, nothing is fetched.
        let again = try await ChildProcess.run(
            "/bin/sh",
            ["-c", "printf '\(base)/a.tar.gz\\n\(base)/b.tar.gz\\n' | \"$0\" warm --config \"$1\" -", binary, config.path],
            environment: environment
        )
        #expect(again.status == 0, "\(again.stdout) \(again.stderr)")
        #expect(again.stdout.contains("200  tollgate; hit  \(base)/a.tar.gz"))
        #expect(again.stdout.contains("warmed 2 of 2 URLs: 0 stored, 2 already fresh"))
        #expect(origin.requestCount == 4, "\(origin.requests.map(\.target)) \(again.stdout) \(again.stderr)")

        // Offline: the origin is gone, the proxy serves the warmed artifacts from the cache.
        origin.stop()
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 1)
        defer { served.child.kill() }
        let response = try await request(
            "GET \(base)/b.tar.gz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
            port: try served.port("forward")
        )
        #expect(response.status == 200)
        #expect(response.bodyText == "artifact /b.tar.gz")
        #expect(response.header("Cache-Status") == "tollgate; hit")
    }

    @Test("A URL that redirects is warmed hop by hop, as a client following it asks: each hop stored and in the manifest, served offline to curl -L; a loop fails after 10 hops; a hop that may not be stored says so")
    func redirectsWarmedHopByHop() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try await LoopbackOrigin.start { request, respond in
            let path = request.path
            if path == "/download" {
                // A registry's download URL, redirecting to its storage (GitHub's zipball to codeload).
                respond.send(status: 302, headers: ["Location": "/storage/a.zip?token=1", "Cache-Control": "max-age=60"], body: "")
            } else if path == "/storage/a.zip" {
                respond.send(status: 200, headers: ["Cache-Control": "max-age=600"], body: "the artifact")
            } else if path.hasPrefix("/loop/"), let hop = Int(path.dropFirst(6)) {
                respond.send(status: 301, headers: ["Location": "/loop/\(hop + 1)"], body: "")
            } else if path == "/uncacheable" {
                respond.send(status: 302, headers: ["Location": "/storage/a.zip?token=1"], body: "")
            } else {
                respond.send(status: 404, body: "no")
            }
        }
        defer { origin.stop() }
        let config = try Self.writeConfiguration(in: directory)
        let base = "http://127.0.0.1:\(origin.port)"
        let binary = try #require(tollgateBinary)
        let environment = ["XDG_DATA_HOME": directory.appendingPathComponent("data").path]
        let list = directory.appendingPathComponent("urls.txt")
        let manifest = directory.appendingPathComponent("deps.lock.json").path

        try "\(base)/download\n".write(to: list, atomically: true, encoding: .utf8)
        let warmed = try await ChildProcess.run(binary, ["warm", "--config", config.path, "--manifest", manifest, list.path], environment: environment)
        #expect(warmed.status == 0, "\(warmed.stdout) \(warmed.stderr)")
        let lines = warmed.stdout.split(separator: "\n").map(String.init)
        #expect(
            lines == [
                "302  tollgate; fwd=uri-miss; stored  \(base)/download",
                "200  tollgate; fwd=uri-miss; stored  \(base)/storage/a.zip?token=1",
                "warmed 2 of 2 URLs: 2 stored, 0 already fresh, 0 not stored, 0 failed, 0 resumed",
            ],
            "\(warmed.stdout)"
        )
        let entries = try #require(JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: manifest))) as? [String: Any])
        let listed = (entries["entries"] as? [[String: Any]] ?? []).compactMap { $0["url"] as? String }.sorted()
        #expect(listed == ["\(base)/download", "\(base)/storage/a.zip?token=1"], "\(entries)")

        try "\(base)/loop/0\n\(base)/uncacheable\n".write(to: list, atomically: true, encoding: .utf8)
        let looped = try await ChildProcess.run(binary, ["warm", "--config", config.path, list.path], environment: environment)
        #expect(looped.status == 1, "\(looped.stdout) \(looped.stderr)")
        #expect(
            looped.stdout.contains("failed  \(base)/loop/10: more than 10 redirects from \(base)/loop/0; the last to \(base)/loop/11\n"),
            "\(looped.stdout)"
        )
        #expect(origin.requests.filter { $0.path.hasPrefix("/loop/") }.count == 11, "the listed URL and ten hops")
        #expect(looped.stdout.contains("302  tollgate; fwd=uri-miss; detail=\"status\"  \(base)/uncacheable"), "\(looped.stdout)")
        #expect(looped.stdout.contains("200  tollgate; hit  \(base)/storage/a.zip?token=1"), "its target warmed once: \(looped.stdout)")

        // Offline with the manifest, the registry gone: curl follows the stored redirect to the stored artifact.
        origin.stop()
        let served = try await Served.start(["--config", config.path, "--offline", "--manifest", manifest], directory: directory, lines: 1)
        defer { served.child.kill() }
        let fetched = try await ChildProcess.run(
            "/usr/bin/curl", ["-sSL", "--proxy", "http://127.0.0.1:\(try served.port("forward"))", "\(base)/download"]
        )
        #expect(fetched.status == 0 && fetched.stdout == "the artifact", "\(fetched.stdout) \(fetched.stderr)")
    }

    @Test("warm refuses an unknown --session and a bad --concurrency with exit 1")
    func badArguments() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let list = directory.appendingPathComponent("urls.txt")
        try "http://127.0.0.1:9/x\n".write(to: list, atomically: true, encoding: .utf8)
        let binary = try #require(tollgateBinary)
        let environment = [
            "XDG_DATA_HOME": directory.appendingPathComponent("data").path,
            "XDG_CACHE_HOME": directory.appendingPathComponent("cache").path,
        ]
        let session = try await ChildProcess.run(binary, ["warm", "--session", "nightly", list.path], environment: environment)
        #expect(session.status == 1)
        #expect(session.stderr.contains("no session named nightly"), "\(session.stderr)")
        let concurrency = try await ChildProcess.run(binary, ["warm", "--concurrency", "0", list.path], environment: environment)
        #expect(concurrency.status == 1)
        #expect(concurrency.stderr.contains("--concurrency must be 1 to 64"), "\(concurrency.stderr)")
    }

    @Test("A transfer cut mid-way resumes from where it was; the cache holds it byte-exact and the summary counts it")
    func warmResumesCutTransfer() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let body = (0..<400_000).map { UInt8(truncatingIfNeeded: $0 &* 29 &+ 7) }
        let origin = try await RangeOrigin.start(body: body)
        defer { origin.stop() }
        origin.cutNext(after: 150_000)
        let config = try writeForwardCacheConfiguration(in: directory)
        let list = directory.appendingPathComponent("urls.txt")
        try "\(origin.url)\n".write(to: list, atomically: true, encoding: .utf8)
        let manifest = directory.appendingPathComponent("manifest.json")
        let binary = try #require(tollgateBinary)
        let environment = ["XDG_DATA_HOME": directory.appendingPathComponent("data").path]
        let warmed = try await ChildProcess.run(
            binary, ["warm", "--config", config.path, "--manifest", manifest.path, list.path], environment: environment
        )
        #expect(warmed.status == 0, "\(warmed.stdout) \(warmed.stderr)")
        #expect(origin.rangesAsked == [nil, "bytes=150000-"])
        #expect(warmed.stdout.contains("warmed 1 of 1 URLs: 1 stored, 0 already fresh, 0 not stored, 0 failed, 1 resumed"), "\(warmed.stdout)")
        let text = try String(contentsOf: manifest, encoding: .utf8)
        #expect(text.contains(SHA256.hex(SHA256.hash(body))), "\(text)")
        #expect(text.contains("\"size\" : 400000") || text.contains("\"size\":400000"), "\(text)")

        let none = directory.appendingPathComponent("none")
        try FileManager.default.createDirectory(at: none, withIntermediateDirectories: true)
        let strict = try writeForwardCacheConfiguration(in: none)
        origin.cutNext(after: 1_000)
        let failed = try await ChildProcess.run(
            binary, ["warm", "--config", strict.path, "--resume-attempts", "0", list.path], environment: environment
        )
        #expect(failed.status == 1)
        #expect(failed.stdout.contains("0 resumed"), "\(failed.stdout)")
        #expect(failed.stdout.contains("failed  \(origin.url)"), "\(failed.stdout)")
    }
}
