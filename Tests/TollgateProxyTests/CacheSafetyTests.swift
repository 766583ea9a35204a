import Foundation
import Testing
import TollgateCache
import TollgateHTTP
import TollgateTesting

/// Four ways a client or the disk could make the cache serve the wrong thing, tried as an
/// attacker would, through the built executable.
@Suite(
    "Cache safety: what one client sends never becomes what another gets (the built executable)",
    .serialized,
    .timeLimit(.minutes(1)),
    .enabled(if: tollgateBinary != nil)
)
struct CacheSafetyTests {
    /// An origin that builds its (cacheable) answer from the forwarding fields it receives.
    private func reflectingOrigin() async throws -> LoopbackOrigin {
        try await LoopbackOrigin.start { request, respond in
            let reflected = ["Forwarded", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Forwarded-Port", "X-Forwarded-For"]
                .map { "\($0)=\(request.headerFields[$0] ?? "-")" }.joined(separator: " ")
            respond.send(status: 200, headers: ["Cache-Control": "max-age=600"], body: reflected)
        }
    }

    @Test("A forward client's X-Forwarded-Host, -Proto, -Port and Forwarded never reach the origin")
    func forwardingFieldsOfAForwardClient() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try await reflectingOrigin()
        defer { origin.stop() }
        let config = try writeForwardCacheConfiguration(in: directory)
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 1)
        defer { served.child.kill() }
        let poisoned = try await request(
            "GET http://127.0.0.1:\(origin.port)/page HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-Host: evil.example\r\n"
                + "X-Forwarded-Proto: javascript\r\nX-Forwarded-Port: 1337\r\nForwarded: host=evil.example\r\n\r\n",
            port: try served.port("forward")
        )
        #expect(poisoned.status == 200)
        #expect(!poisoned.bodyText.contains("evil") && !poisoned.bodyText.contains("1337"), "\(poisoned.bodyText)")
        let received = try #require(origin.requests.first)
        for name in ["X-Forwarded-Host", "X-Forwarded-Proto", "X-Forwarded-Port", "Forwarded"] {
            #expect(received.headerFields[name] == nil, "\(name) reached the origin")
        }
        let next = try await request(
            "GET http://127.0.0.1:\(origin.port)/page HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: try served.port("forward")
        )
        #expect(next.header("Cache-Status") == "tollgate; hit")
        #expect(!next.bodyText.contains("evil"))
    }

    @Test("A reverse listener states the client's address, host and scheme itself, unless the client is a trusted forwarder")
    func forwardingFieldsOfAReverseClient() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try await reflectingOrigin()
        defer { origin.stop() }
        let spoofing =
            "X-Forwarded-Host: evil.example\r\nX-Forwarded-For: 6.6.6.6\r\nX-Forwarded-Proto: https\r\nForwarded: for=6.6.6.6\r\n"

        let untrusted = try writeReverseCacheConfiguration(in: directory, upstreamPort: origin.port)
        do {
            let served = try await Served.start(["--config", untrusted.path], directory: directory, lines: 1)
            defer { served.child.kill() }
            let answer = try await request(
                "GET /a HTTP/1.1\r\nHost: shop.example\r\n\(spoofing)\r\n", port: try served.port("reverse")
            )
            #expect(answer.bodyText == "Forwarded=- X-Forwarded-Host=shop.example X-Forwarded-Proto=http X-Forwarded-Port=- X-Forwarded-For=127.0.0.1")
        }

        let trusted = try writeReverseCacheConfiguration(
            in: directory, upstreamPort: origin.port, more: "access:\n  trusted-forwarders: [\"127.0.0.0/8\"]"
        )
        let served = try await Served.start(["--config", trusted.path], directory: directory, lines: 1)
        defer { served.child.kill() }
        let answer = try await request("GET /b HTTP/1.1\r\nHost: shop.example\r\n\(spoofing)\r\n", port: try served.port("reverse"))
        #expect(answer.bodyText.contains("X-Forwarded-Host=evil.example"), "\(answer.bodyText)")
        #expect(answer.bodyText.contains("X-Forwarded-For=6.6.6.6, 127.0.0.1"), "\(answer.bodyText)")
    }

    @Test("Behind a reverse listener, an answer built from one client's Host (as X-Forwarded-Host) is stored for that Host alone")
    func reverseClientHostIsKeyed() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try await reflectingOrigin()
        defer { origin.stop() }
        let config = try writeReverseCacheConfiguration(in: directory, upstreamPort: origin.port)
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 1)
        defer { served.child.kill() }
        let port = try served.port("reverse")
        func get(host: String) async throws -> RawResponse {
            try await request("GET /page HTTP/1.1\r\nHost: \(host)\r\n\r\n", port: port)
        }
        let poisoned = try await get(host: "evil.example")
        #expect(poisoned.bodyText.contains("X-Forwarded-Host=evil.example"), "\(poisoned.bodyText)")
        let honest = try await get(host: "shop.example")
        #expect(honest.bodyText.contains("X-Forwarded-Host=shop.example"), "\(honest.bodyText)")
        #expect(honest.header("Cache-Status") == "tollgate; fwd=uri-miss; stored")
        // Each Host's answer is a hit for that Host.
        let again = try await get(host: "shop.example")
        #expect(again.header("Cache-Status") == "tollgate; hit")
        #expect(again.bodyText.contains("X-Forwarded-Host=shop.example"), "\(again.bodyText)")
        #expect(try await get(host: "evil.example").header("Cache-Status") == "tollgate; hit")
        #expect(origin.requestCount == 2)
        // The same site spelled otherwise (case, the default port) is told to the origin as one
        // name, and so shares its variant.
        for spelling in ["Shop.Example", "shop.example:80", "SHOP.EXAMPLE:80"] {
            let same = try await get(host: spelling)
            #expect(same.header("Cache-Status") == "tollgate; hit", "\(spelling)")
            #expect(same.bodyText.contains("X-Forwarded-Host=shop.example "), "\(same.bodyText)")
        }
        let otherPort = try await get(host: "shop.example:8080")
        #expect(otherPort.header("Cache-Status") == "tollgate; fwd=uri-miss; stored")
        #expect(otherPort.bodyText.contains("X-Forwarded-Host=shop.example:8080"), "\(otherPort.bodyText)")
        #expect(origin.requestCount == 3)
    }

    @Test("A GET with a body is refused with 400 and a closed connection; nothing reaches the origin or the cache")
    func getWithABody() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, headers: ["Cache-Control": "max-age=600"], body: "answer to \(request.body.count) bytes")
        }
        defer { origin.stop() }
        let config = try writeReverseCacheConfiguration(in: directory, upstreamPort: origin.port)
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 1)
        defer { served.child.kill() }
        let port = try served.port("reverse")
        let client = try await RawClient.connect(port: port)
        defer { client.close() }
        try await client.send("GET /search HTTP/1.1\r\nHost: x\r\nContent-Length: 9\r\n\r\n{\"q\":\"x\"}")
        try await client.waitForClose()
        let refused = try #require(client.responses.first)
        #expect(refused.status == 400)
        #expect(refused.header("Tollgate-Error") == "bad-request")
        #expect(refused.bodyText.contains("with a body"))
        let chunked = try await request(
            "HEAD /search HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", port: port
        )
        #expect(chunked.status == 400)
        #expect(origin.requestCount == 0)
        let plain = try await request("GET /search HTTP/1.1\r\nHost: x\r\n\r\n", port: port)
        #expect(plain.bodyText == "answer to 0 bytes")
        #expect(plain.header("Cache-Status") == "tollgate; fwd=uri-miss; stored")
    }

    @Test("A body file truncated behind the proxy's back is a miss: the entry is removed, logged, and fetched again")
    func truncatedBodyFile() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let body = String(repeating: "0123456789", count: 30_000)
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.send(status: 200, headers: ["Cache-Control": "max-age=600"], body: body)
        }
        defer { origin.stop() }
        let config = try writeReverseCacheConfiguration(in: directory, upstreamPort: origin.port)
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 1)
        defer { served.child.kill() }
        let port = try served.port("reverse")
        #expect(try await request("GET /big HTTP/1.1\r\nHost: x\r\n\r\n", port: port).bodyText == body)
        #expect(try await request("GET /big HTTP/1.1\r\nHost: x\r\n\r\n", port: port).header("Cache-Status") == "tollgate; hit")

        let bodies = directory.appendingPathComponent("cache/bodies")
        let name = try #require(try FileManager.default.contentsOfDirectory(atPath: bodies.path).first { $0.hasSuffix(".body") })
        let handle = try FileHandle(forWritingTo: bodies.appendingPathComponent(name))
        try handle.truncate(atOffset: 1_000)
        try handle.close()

        let again = try await request("GET /big HTTP/1.1\r\nHost: x\r\n\r\n", port: port)
        #expect(again.status == 200)
        #expect(again.bodyText == body, "the truncated file was served")
        #expect(again.header("Cache-Status")?.hasPrefix("tollgate; fwd=uri-miss") == true, "\(again.header("Cache-Status") ?? "-")")
        #expect(origin.requestCount == 2)
        try await eventually("the log line") { served.child.standardError.contains("a stored body file was changed on disk") }
        try await eventually("the stored copy again") {
            (try? FileManager.default.contentsOfDirectory(atPath: bodies.path).filter { $0.hasSuffix(".body") }.count) == 1
        }
    }

    /// End to end over new connections; the race itself (a GET before storage removed the entry)
    /// is held open deterministically by SessionInvalidationTests.
    @Test("A GET sent right after a POST to the same URL was answered, on another connection, is never the invalidated entry")
    func invalidationInForce() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let version = VersionCounter()
        let origin = try await LoopbackOrigin.start { request, respond in
            if request.method == "POST" {
                version.bump()
                respond.send(status: 204)
            } else {
                respond.send(status: 200, headers: ["Cache-Control": "max-age=600"], body: "version \(version.value)")
            }
        }
        defer { origin.stop() }
        let config = try writeReverseCacheConfiguration(in: directory, upstreamPort: origin.port)
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 1)
        defer { served.child.kill() }
        let port = try served.port("reverse")
        for round in 0..<25 {
            let path = "/item/\(round)"
            _ = try await request("GET \(path) HTTP/1.1\r\nHost: x\r\n\r\n", port: port)
            #expect(try await request("GET \(path) HTTP/1.1\r\nHost: x\r\n\r\n", port: port).header("Cache-Status") == "tollgate; hit")
            let posted = try await request("POST \(path) HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx", port: port)
            #expect(posted.status == 204)
            let after = try await request("GET \(path) HTTP/1.1\r\nHost: x\r\n\r\n", port: port)
            #expect(after.bodyText == "version \(version.value)", "round \(round): \(after.header("Cache-Status") ?? "-")")
        }
    }

    @Test("A cache that cannot write (its bodies/ removed) passes responses on whole and unstored, logs storage-error, and says so on stderr once")
    func storageFailure() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let body = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.send(status: 200, headers: ["Cache-Control": "max-age=600"], bytes: body)
        }
        defer { origin.stop() }
        let accessLog = directory.appendingPathComponent("access.log")
        let config = try writeForwardCacheConfiguration(in: directory, more: "log:\n  access: \"\(accessLog.path)\"\n  format: json")
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 1)
        defer { served.child.kill() }
        let port = try served.port("forward")
        try FileManager.default.removeItem(at: directory.appendingPathComponent("cache/bodies"))
        for path in ["/one", "/two", "/one"] {
            let answer = try await request("GET http://127.0.0.1:\(origin.port)\(path) HTTP/1.1\r\nHost: x\r\n\r\n", port: port)
            #expect(answer.status == 200)
            #expect(answer.body == body, "\(path) came whole")
        }
        #expect(origin.requestCount == 3, "nothing was stored")
        try await eventually("three log lines") {
            ((try? String(contentsOf: accessLog, encoding: .utf8)) ?? "").split(separator: "\n").count == 3
        }
        for line in try String(contentsOf: accessLog, encoding: .utf8).split(separator: "\n") {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(object["stored"] as? Bool == false)
            #expect(object["not_stored_reason"] as? String == "storage-error", "\(line)")
        }
        let reports = served.child.standardError.components(separatedBy: "the cache could not store a response").count - 1
        #expect(reports == 1, "\(served.child.standardError)")
        #expect(served.child.standardError.contains("No such file or directory"), "\(served.child.standardError)")
    }

    @Test("Two proxies with one cache directory never answer one URL with another's body; their entries, LRU index and counts all add up")
    func twoProcessesShareOneCache() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // Bodies of equal length, each made of its path's letter: 100 KB (a body file) and 1 KB
        // (inline in the record).
        let origin = try await LoopbackOrigin.start { request, respond in
            let letter = request.path.dropFirst().first.map { UInt8($0.asciiValue ?? 0x3F) } ?? 0x3F
            let size = request.path.hasSuffix("-small") ? 1_000 : 100_000
            respond.send(status: 200, headers: ["Cache-Control": "max-age=600"], bytes: [UInt8](repeating: letter, count: size))
        }
        defer { origin.stop() }
        let config = try writeForwardCacheConfiguration(in: directory)
        let first = try await Served.start(["--config", config.path], directory: directory, lines: 1)
        defer { first.child.kill() }
        let second = try await Served.start(["--config", config.path], directory: directory, lines: 1)
        defer { second.child.kill() }
        let ports = [try first.port("forward"), try second.port("forward")]
        func get(_ path: String, via port: Int) async throws -> (status: String?, body: [UInt8]) {
            let answer = try await request("GET http://127.0.0.1:\(origin.port)\(path) HTTP/1.1\r\nHost: x\r\n\r\n", port: port)
            return (answer.header("Cache-Status"), Array(answer.bodyText.utf8))
        }
        // Each stores two of its own, one after the other's: ids counted on from the same last
        // one collided here (the second commit replaced the first's record and body file).
        for (path, port) in [("/a", ports[0]), ("/b", ports[1]), ("/c-small", ports[0]), ("/d-small", ports[1])] {
            #expect(try await get(path, via: port).status == "tollgate; fwd=uri-miss; stored")
        }
        // Looked at from a third process while both run: one LRU entry for each variant (sequence
        // numbers counted in memory from the same last one collided too, before any hit).
        do {
            let store = try CacheStore(options: CacheStoreOptions(path: directory.appendingPathComponent("cache").path))
            defer { store.close() }
            try await eventually("the four entries committed") { (try? store.list().count) == 4 }
            #expect(Set(try store.leastRecentlyUsed()) == Set(try store.list().map(\.id)))
            #expect(try store.leastRecentlyUsed().count == 4)
        }
        var hits = 0
        for round in 0..<2 {
            for port in ports {
                for path in ["/a", "/b", "/c-small", "/d-small"] {
                    let (status, body) = try await get(path, via: port)
                    #expect(status == "tollgate; hit", "round \(round), \(path) via \(port)")
                    let letter = UInt8(ascii: path.unicodeScalars.dropFirst().first!)
                    #expect(body.count == (path.hasSuffix("-small") ? 1_000 : 100_000) && body.allSatisfy { $0 == letter }, "\(path) via \(port)")
                    hits += 1
                }
            }
        }
        #expect(origin.requestCount == 4)
        for served in [first, second] {
            served.child.send(SIGTERM)
            #expect(try await served.child.waitForExit() == 0)
        }

        let store = try CacheStore(options: CacheStoreOptions(path: directory.appendingPathComponent("cache").path))
        defer { store.close() }
        let listed = try store.list()
        #expect(Set(listed.map(\.url)) == Set(["/a", "/b", "/c-small", "/d-small"].map { "http://127.0.0.1:\(origin.port)\($0)" }))
        #expect(Set(try store.leastRecentlyUsed()) == Set(listed.map(\.id)), "one LRU entry for each variant")
        #expect(try store.leastRecentlyUsed().count == 4)
        #expect(try store.verify().problems.isEmpty)
        // Each process adds its counts to the stored totals (each wrote its own over the other's).
        let statistics = try store.statistics()
        #expect(statistics.hits == UInt64(hits), "\(statistics)")
    }
}

/// A number the origin's handler bumps (on its event loop) and reads.
private final class VersionCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var current = 0
    var value: Int { lock.withLock { current } }
    func bump() { lock.withLock { current += 1 } }
}
