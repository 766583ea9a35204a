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

    /// `curl -s -D - -o FILE` through the proxy at `port`: the head's status and fields, and the body's path.
    private func fetch(_ url: String, port: Int, into directory: URL, _ extra: [String] = []) async throws -> (status: String, fields: [String: String], body: Data) {
        let out = directory.appendingPathComponent("out-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: out) }
        let result = try await ChildProcess.run("/usr/bin/curl", ["-s", "-D", "-", "-o", out.path, "-x", "http://127.0.0.1:\(port)"] + extra + [url])
        let lines = result.stdout.components(separatedBy: "\r\n")
        var fields: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let status = lines.first?.split(separator: " ").dropFirst().first.map(String.init) ?? "-"
        return (status, fields, (try? Data(contentsOf: out)) ?? Data())
    }

    /// `length` bytes that differ from position to position (a misplaced range shows).
    private static func pattern(_ length: Int, seed: UInt8 = 0) -> Data {
        var bytes = [UInt8](repeating: 0, count: length)
        for index in 0..<length { bytes[index] = UInt8(truncatingIfNeeded: index &* 31 &+ index >> 9 &+ Int(seed)) }
        return Data(bytes)
    }

    @Test("A mapped file is served as a static file server serves it: ETag and Last-Modified, 304 to If-None-Match and If-Modified-Since, 206 to a Range, 416 past the end, a new ETag once edited; a file over 64 MiB streamed whole; gzip with compress")
    func staticFileServing() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let site = directory.appendingPathComponent("site")
        try FileManager.default.createDirectory(at: site, withIntermediateDirectories: true)
        let script = site.appendingPathComponent("app.js")
        let big = site.appendingPathComponent("big.bin")
        try Self.pattern(300_000).write(to: script)
        // Over the 64 MiB whole-file limit map-local had, and over the 1 MiB under which a loopback
        // client gets sendfile: read and written piece by piece.
        try Self.pattern(70 << 20, seed: 7).write(to: big)
        let config = try writeForwardCacheConfiguration(
            in: directory,
            more: """
                hosts:
                  - match: "static.test"
                    map-local:
                      - { path: /, directory: "\(site.path)" }
                  - match: "gzip.test"
                    map-local:
                      - { path: /, directory: "\(site.path)" }
                    compress: { types: [text/javascript] }
                """
        )
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 1)
        defer { served.child.kill() }
        let port = try served.port("forward")

        let whole = try await fetch("http://static.test/app.js", port: port, into: directory)
        #expect(whole.status == "200" && whole.body == Self.pattern(300_000), "\(whole.status) \(whole.body.count)")
        let etag = try #require(whole.fields["etag"])
        let lastModified = try #require(whole.fields["last-modified"])
        #expect(whole.fields["accept-ranges"] == "bytes" && whole.fields["cache-control"] == "no-cache")
        #expect(whole.fields["content-type"] == "text/javascript; charset=utf-8" && whole.fields["content-length"] == "300000")

        let unchanged = try await fetch("http://static.test/app.js", port: port, into: directory, ["-H", "If-None-Match: \(etag)"])
        #expect(unchanged.status == "304" && unchanged.body.isEmpty && unchanged.fields["etag"] == etag)
        let since = try await fetch("http://static.test/app.js", port: port, into: directory, ["-H", "If-Modified-Since: \(lastModified)"])
        #expect(since.status == "304" && since.body.isEmpty)

        let part = try await fetch("http://static.test/app.js", port: port, into: directory, ["-r", "1000-1999"])
        #expect(part.status == "206" && part.fields["content-range"] == "bytes 1000-1999/300000")
        #expect(part.body == Self.pattern(300_000)[1000..<2000])
        let past = try await fetch("http://static.test/app.js", port: port, into: directory, ["-r", "400000-"])
        #expect(past.status == "416" && past.fields["content-range"] == "bytes */300000")
        // A FIFO is not a file to answer with (and opening it must not wait for a writer).
        #expect(mkfifo(site.appendingPathComponent("pipe.txt").path, 0o600) == 0)
        let fifo = try await fetch("http://static.test/pipe.txt", port: port, into: directory, ["-m", "5"])
        #expect(fifo.status == "404", "\(fifo)")

        // Files are read at each request: an edit is seen, with validators of its own.
        try Self.pattern(300_001, seed: 3).write(to: script)
        let edited = try await fetch("http://static.test/app.js", port: port, into: directory, ["-H", "If-None-Match: \(etag)"])
        #expect(edited.status == "200" && edited.body == Self.pattern(300_001, seed: 3) && edited.fields["etag"] != etag)

        let large = try await fetch("http://static.test/big.bin", port: port, into: directory)
        #expect(large.status == "200" && large.fields["content-length"] == String(70 << 20))
        #expect(large.body == Self.pattern(70 << 20, seed: 7), "\(large.body.count) bytes")
        let tail = try await fetch("http://static.test/big.bin", port: port, into: directory, ["-r", "50000000-50999999"])
        #expect(tail.status == "206" && tail.body == Self.pattern(70 << 20, seed: 7)[50_000_000..<51_000_000])

        let compressed = try await fetch("http://gzip.test/app.js", port: port, into: directory, ["--compressed", "-H", "Accept-Encoding: gzip"])
        #expect(compressed.status == "200" && compressed.fields["content-encoding"] == "gzip" && compressed.fields["content-length"] == nil)
        #expect(compressed.body == Self.pattern(300_001, seed: 3), "decoded \(compressed.body.count) bytes")
        let brotli = try await fetch("http://gzip.test/app.js", port: port, into: directory, ["--compressed"])
        #expect(brotli.status == "200" && brotli.fields["content-encoding"] == "br")
        #expect(brotli.body == Self.pattern(300_001, seed: 3), "decoded \(brotli.body.count) bytes")
    }

    @Test("A client that does not read holds the file where it is: the proxy reads a large mapped file only as fast as the client takes it")
    func mappedFileBackPressure() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("large.bin")
        let length = 96 << 20
        try Self.pattern(length).write(to: file)
        let config = try writeForwardCacheConfiguration(
            in: directory,
            more: """
                hosts:
                  - match: "static.test"
                    map-local:
                      - { path: /large.bin, file: "\(file.path)" }
                """
        )
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 1)
        defer { served.child.kill() }
        let port = try served.port("forward")
        func residentMiB() throws -> Int {
            let status = try String(contentsOfFile: "/proc/\(served.child.pid)/status", encoding: .utf8)
            let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") })
            return (Int(line.split(separator: " ")[1]) ?? 0) / 1024
        }
        // A first request brings the proxy's own pages in.
        let client = try await RawClient.connect(port: port, paused: true)
        defer { client.close() }
        let before = try residentMiB()
        try await client.send("GET http://static.test/large.bin HTTP/1.1\r\nHost: static.test\r\n\r\n")
        try await Task.sleep(for: .milliseconds(1500))
        let stalled = try residentMiB()
        #expect(stalled - before < 32, "resident \(before) → \(stalled) MiB while the client read nothing")
        try await client.resumeReading()
        try await client.waitUntil("the whole file", timeout: .seconds(30)) { $0.receivedCount >= length }
        let responses = try await client.waitForResponses(1)
        #expect(responses.first?.status == 200 && responses.first?.body.count == length)
    }
}
