import Foundation
import Testing
import TollgateHTTP
import TollgateTesting

/// `hosts[].compress` through the built proxy, as curl sees it.
@Suite(
    "hosts[].compress: responses compressed with Brotli or gzip for clients that accept them (the built executable)",
    .serialized,
    .timeLimit(.minutes(1)),
    .enabled(if: tollgateBinary != nil && executableOnPath("curl") != nil)
)
struct CompressionProxyTests {
    @Test("A page is compressed from the origin and from the cache, over HTTP/1.1 and HTTP/2 — Brotli for curl --compressed, gzip for a client naming gzip alone; identity for others; what may not be compressed is not")
    func compresses() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let page = String(repeating: "<li>an item of a long list, much like the one before</li>\n", count: 2_000)
        let origin = try await LoopbackOrigin.start { request, respond in
            var headers: HeaderFields = ["Cache-Control": "max-age=600", "ETag": "\"v1\""]
            switch request.target {
            case "/image": headers.add(name: "Content-Type", value: "image/png")
            case "/small": headers.add(name: "Content-Type", value: "text/html")
            case "/transformless":
                headers.add(name: "Content-Type", value: "text/html")
                headers.remove("Cache-Control")
                headers.add(name: "Cache-Control", value: "max-age=600, no-transform")
            default: headers.add(name: "Content-Type", value: "text/html; charset=utf-8")
            }
            respond.send(status: 200, headers: headers, body: request.target == "/small" ? "<p>short</p>" : page)
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
        hosts:
          - match: "127.0.0.1"
            compress: true
        """.write(to: config, atomically: true, encoding: .utf8)
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 1)
        defer { served.child.kill() }
        let port = try served.port("reverse")

        /// curl: the head's fields, the bytes on the wire, and the body as curl decoded it.
        func get(_ path: String, _ options: [String] = ["--compressed"]) async throws -> (fields: [String: String], wire: Int, body: String) {
            let body = directory.appendingPathComponent("body-\(UUID().uuidString)")
            let head = directory.appendingPathComponent("head-\(UUID().uuidString)")
            let result = try await ChildProcess.run(
                "/usr/bin/curl", ["-s", "-o", body.path, "-D", head.path, "-w", "%{size_download}"] + options + ["http://127.0.0.1:\(port)\(path)"]
            )
            var fields: [String: String] = [:]
            for line in try String(contentsOf: head, encoding: .utf8).split(separator: "\r\n").dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                let name = line[..<colon].lowercased()
                let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                fields[name] = fields[name].map { $0 + ", " + value } ?? value
            }
            return (fields, Int(result.stdout) ?? -1, (try? String(contentsOf: body, encoding: .utf8)) ?? "")
        }

        // curl --compressed sends `deflate, gzip, br, zstd`: the rule prefers br.
        let miss = try await get("/page")
        #expect(miss.fields["content-encoding"] == "br", "\(miss.fields)")
        #expect(miss.fields["content-length"] == nil)
        #expect(miss.fields["vary"] == "Accept-Encoding")
        #expect(miss.fields["etag"] == "W/\"v1\"")
        #expect(miss.body == page)
        #expect(miss.wire > 0 && miss.wire < page.utf8.count / 10, "\(miss.wire) bytes on the wire for \(page.utf8.count)")
        let hit = try await get("/page")
        #expect(hit.fields["cache-status"] == "tollgate; hit")
        #expect(hit.fields["content-encoding"] == "br")
        #expect(hit.body == page)
        let overHTTP2 = try await get("/page", ["--compressed", "--http2-prior-knowledge"])
        #expect(overHTTP2.fields["content-encoding"] == "br")
        #expect(overHTTP2.body == page)
        let gzipped = try await get("/page", ["--compressed", "-H", "Accept-Encoding: gzip"])
        #expect(gzipped.fields["content-encoding"] == "gzip" && gzipped.fields["cache-status"] == "tollgate; hit")
        #expect(gzipped.body == page)
        #expect(gzipped.wire > 0 && gzipped.wire < page.utf8.count / 10)
        #expect(miss.wire < gzipped.wire, "Brotli \(miss.wire) bytes, gzip \(gzipped.wire)")
        // A client that names no coding gets the origin's bytes, marked as varying.
        let identity = try await get("/page", [])
        #expect(identity.fields["content-encoding"] == nil)
        #expect(identity.fields["content-length"] == String(page.utf8.count))
        #expect(identity.fields["vary"] == "Accept-Encoding")
        #expect(identity.fields["etag"] == "\"v1\"")
        #expect(identity.body == page)
        let head = try await get("/page", ["--compressed", "-I"])
        #expect(head.fields["content-encoding"] == "br")
        #expect(head.fields["content-length"] == nil)
        // A range is of the origin's bytes: not compressed.
        let range = try await get("/page", ["--compressed", "-r", "0-99"])
        #expect(range.fields["content-encoding"] == nil)
        #expect(range.body == String(page.prefix(100)))
        for path in ["/image", "/small", "/transformless"] {
            let plain = try await get(path)
            #expect(plain.fields["content-encoding"] == nil, "\(path): \(plain.fields)")
            #expect(plain.fields["vary"] == nil, "\(path)")
        }
        #expect(origin.requestCount == 4, "the stored copy is the origin's, compressed again for each client")
    }
}
