import Foundation
import Testing
import TollgateTesting

/// `hosts[].map-local` through the built executable: a host's paths answered from local files,
/// online without asking the origin, and offline.
@Suite("map-local: paths answered from local files (the built executable)", .serialized, .timeLimit(.minutes(1)), .enabled(if: tollgateBinary != nil))
struct MapLocalProxyTests {
    /// `curl` through the proxy at `port`: the status line's code, the named fields and the body.
    private func get(_ url: String, port: Int, method: String = "GET") async throws -> (status: String, type: String?, extra: String?, body: String) {
        let result = try await ChildProcess.run(
            "/usr/bin/curl", ["-s", "-i", "-X", method, "-x", "http://127.0.0.1:\(port)", url] + (method == "HEAD" ? ["-I"] : [])
        )
        let parts = result.stdout.components(separatedBy: "\r\n\r\n")
        let lines = parts[0].components(separatedBy: "\r\n")
        func field(_ name: String) -> String? {
            lines.first { $0.lowercased().hasPrefix(name.lowercased() + ":") }.map { String($0.dropFirst(name.count + 1)).trimmingCharacters(in: .whitespaces) }
        }
        let status = lines.first?.split(separator: " ").dropFirst().first.map(String.init) ?? "-"
        return (status, field("Content-Type"), field("X-Mock"), parts.dropFirst().joined(separator: "\r\n\r\n"))
    }

    @Test("A file and a directory answer their paths (index.html, Content-Type, the rule's response-headers) without the origin; a missing file is 404, an escape 400; other paths go to the origin; offline too")
    func mappedPaths() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try await LoopbackOrigin.start { request, respond in respond.send(status: 200, body: "origin \(request.path)") }
        defer { origin.stop() }
        let mocks = directory.appendingPathComponent("mocks")
        try FileManager.default.createDirectory(at: mocks.appendingPathComponent("site/css"), withIntermediateDirectories: true)
        try #"{"beta":true}"#.write(to: mocks.appendingPathComponent("flags.json"), atomically: true, encoding: .utf8)
        try "<h1>local</h1>".write(to: mocks.appendingPathComponent("site/index.html"), atomically: true, encoding: .utf8)
        try "body{}".write(to: mocks.appendingPathComponent("site/css/a.css"), atomically: true, encoding: .utf8)
        let config = try writeForwardCacheConfiguration(
            in: directory,
            more: """
                hosts:
                  - match: "127.0.0.1"
                    map-local:
                      - { path: /api/flags, file: "\(mocks.path)/flags.json" }
                      - { path: /site/, directory: "\(mocks.path)/site" }
                    response-headers: { add: { X-Mock: local } }
                """
        )
        let base = "http://127.0.0.1:\(origin.port)"
        for offline in [false, true] {
            let served = try await Served.start(["--config", config.path] + (offline ? ["--offline"] : []), directory: directory, lines: 1)
            defer { served.child.kill() }
            let port = try served.port("forward")
            let flags = try await get("\(base)/api/flags", port: port)
            #expect(flags.status == "200" && flags.type == "application/json" && flags.extra == "local" && flags.body == #"{"beta":true}"#, "\(flags)")
            let page = try await get("\(base)/site/", port: port)
            #expect(page.status == "200" && page.type == "text/html; charset=utf-8" && page.body == "<h1>local</h1>", "\(page)")
            let style = try await get("\(base)/site/css/a.css", port: port)
            #expect(style.status == "200" && style.type == "text/css; charset=utf-8" && style.body == "body{}", "\(style)")
            #expect(try await get("\(base)/site/css/missing.css", port: port).status == "404")
            #expect(try await get("\(base)/site/%2e%2e/flags.json", port: port).status == "400")
            let head = try await get("\(base)/api/flags", port: port, method: "HEAD")
            #expect(head.status == "200" && head.body.isEmpty, "\(head)")
            if !offline {
                let other = try await get("\(base)/elsewhere", port: port)
                #expect(other.status == "200" && other.body == "origin /elsewhere", "\(other)")
                #expect(origin.requests.map(\.path) == ["/elsewhere"], "only the unmapped path reached the origin")
            }
        }
    }
}
