import Foundation
import NIOCore
import Testing
import TollgateCache
import TollgateHTTP
import TollgatePolicy
import TollgateSession
import TollgateTesting

@testable import TollgateProxy

/// A forward proxy whose sessions share a cache in a temporary directory, its rules from a
/// PolicyRuntime the test changes, and an origin that counts what reaches it.
private struct OfflineFixture {
    let origin: LoopbackOrigin
    let runtime: PolicyRuntime
    let cache: ResponseCache
    let server: ProxyServer
    let offline: OfflineMode
    let directory: URL

    static func start(offline: OfflineMode = OfflineMode(), configuration: PolicyConfiguration = PolicyConfiguration())
        async throws -> OfflineFixture
    {
        let origin = try await LoopbackOrigin.start { request, respond in
            switch request.path {
            case "/stale":
                respond.send(status: 200, headers: ["Cache-Control": "max-age=0, must-revalidate"], body: "stale artifact")
            case "/redirect":
                respond.send(status: 301, headers: ["Location": "/fresh", "Cache-Control": "max-age=600"], body: "")
            default:
                respond.send(status: 200, headers: ["Cache-Control": "max-age=600"], body: "artifact \(request.path)")
            }
        }
        let directory = try temporaryDirectory()
        let cache = try ResponseCache(path: directory.appendingPathComponent("cache").path, maxSize: 64 << 20)
        let runtime = PolicyRuntime(configuration: configuration, sourceFile: nil) { _, _, session in
            session.responseCache = cache
        }
        let server = try await ProxyServer.start(
            ProxyServer.Configuration(
                listen: ListenAddress(host: "127.0.0.1", port: 0),
                accessLog: AccessLog(format: .json) { _ in },
                offline: offline
            ),
            policy: runtime
        )
        return OfflineFixture(
            origin: origin, runtime: runtime, cache: cache, server: server, offline: offline, directory: directory
        )
    }

    var port: Int { server.boundAddress.port }
    var base: String { "http://127.0.0.1:\(origin.port)" }
    var session: Session { runtime.sessions[SessionSettings.defaultName]! }

    func get(_ path: String, _ extra: String = "") async throws -> RawResponse {
        try await request("GET \(base)\(path) HTTP/1.1\r\nHost: x\r\n\(extra)\r\n", port: port)
    }

    func goOffline() {
        var configuration = runtime.configuration
        configuration.offline = true
        runtime.apply(configuration)
    }

    func stop() async {
        await server.shutdown(gracePeriod: .seconds(1))
        runtime.shutdown()
        cache.store.close()
        origin.stop()
        try? FileManager.default.removeItem(at: directory)
    }
}

@Suite("Offline mode: answered from the cache alone", .timeLimit(.minutes(1)))
struct OfflineProxyTests {
    @Test("Offline by a reload: stored responses are served whatever their age, with nothing looked up or connected")
    func servedFromTheCacheAlone() async throws {
        let fixture = try await OfflineFixture.start()
        do {
            #expect(try await fixture.get("/fresh").status == 200)
            #expect(try await fixture.get("/stale").status == 200)
            #expect(fixture.origin.requestCount == 2)

            fixture.goOffline()
            let lookups = fixture.server.destinationLookups
            let connections = fixture.session.connectionsStarted
            let fresh = try await fixture.get("/fresh")
            #expect(fresh.status == 200)
            #expect(fresh.bodyText == "artifact /fresh")
            #expect(fresh.header("Cache-Status") == "tollgate; hit; detail=\"offline\"")
            // must-revalidate and max-age=0: online this would go to the origin.
            let stale = try await fixture.get("/stale")
            #expect(stale.status == 200)
            #expect(stale.bodyText == "stale artifact")
            #expect(stale.header("Cache-Status") == "tollgate; hit; detail=\"stale,offline\"")

            let miss = try await fixture.get("/never-warmed")
            #expect(miss.status == 504)
            #expect(miss.header("Tollgate-Error") == "offline-miss")
            #expect(miss.bodyText.contains("GET \(fixture.base)/never-warmed"), "\(miss.bodyText)")
            let named = try await request("GET http://build-deps.invalid/lib.tgz HTTP/1.1\r\nHost: x\r\n\r\n", port: fixture.port)
            #expect(named.status == 504)
            #expect(named.header("Tollgate-Error") == "offline-miss")
            let post = try await request(
                "POST \(fixture.base)/fresh HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi", port: fixture.port
            )
            #expect(post.status == 504)
            #expect(post.header("Tollgate-Error") == "offline-miss")
            let tunnel = try await request("CONNECT registry.invalid:443 HTTP/1.1\r\nHost: registry.invalid:443\r\n\r\n", port: fixture.port)
            #expect(tunnel.status == 504)
            #expect(tunnel.header("Tollgate-Error") == "offline-miss")

            #expect(fixture.origin.requestCount == 2)
            #expect(fixture.server.destinationLookups == lookups, "a name was looked up offline")
            #expect(fixture.session.connectionsStarted == connections, "an upstream connection was started offline")

            let misses = fixture.offline.misses.misses
            #expect(misses.map(\.url) == ["\(fixture.base)/fresh", "\(fixture.base)/never-warmed", "http://build-deps.invalid/lib.tgz", "registry.invalid:443"].sorted())
            #expect(Set(misses.map(\.reason)) == [.method, .notCached, .tunnel])

            // Online again: the next miss goes to the origin.
            var online = fixture.runtime.configuration
            online.offline = false
            fixture.runtime.apply(online)
            #expect(try await fixture.get("/never-warmed").status == 200)
            #expect(fixture.origin.requestCount == 3)
        } catch {
            await fixture.stop()
            throw error
        }
        await fixture.stop()
    }

    @Test("A redirect warmed by a client that follows it itself is served offline, hop by hop")
    func redirectServedOffline() async throws {
        let fixture = try await OfflineFixture.start()
        do {
            let first = try await fixture.get("/redirect")
            #expect(first.status == 301)
            #expect(first.header("Cache-Status")?.contains("stored") == true, "\(first.header("Cache-Status") ?? "-")")
            #expect(try await fixture.get("/fresh").status == 200)
            // The entries are committed off the loop, after the client has its response: wait
            // for both before going offline (a slow build, e.g. under ThreadSanitizer, lost this).
            try await eventually("/redirect and /fresh stored") {
                ["/redirect", "/fresh"].allSatisfy { path in
                    let key = CacheKey(url: HTTPURL(string: "\(fixture.base)\(path)")!)
                    return (try? fixture.cache.store.lookup(key, requestHeaders: [:])) != nil
                }
            }
            fixture.goOffline()
            let redirect = try await fixture.get("/redirect")
            #expect(redirect.status == 301)
            #expect(redirect.header("Location") == "/fresh")
            #expect(try await fixture.get("/fresh").bodyText == "artifact /fresh")
            #expect(fixture.origin.requestCount == 2)
        } catch {
            await fixture.stop()
            throw error
        }
        await fixture.stop()
    }

    @Test("With a manifest only its variants are served, and a body that is not the manifest's is cut short")
    func servedByTheManifest() async throws {
        // Warm online first, on a proxy of its own over the same cache directory.
        let warming = try await OfflineFixture.start()
        let locked: CacheManifest.Entry
        do {
            #expect(try await warming.get("/locked").status == 200)
            #expect(try await warming.get("/unlisted").status == 200)
            let key = CacheKey(url: HTTPURL(string: "\(warming.base)/locked")!)
            // Committed off the loop after the response went out (see redirectServedOffline).
            try await eventually("/locked stored") { (try? warming.cache.store.lookup(key, requestHeaders: [:])) != nil }
            locked = try #require(
                try warming.cache.store.manifestEntry(
                    key: key, requestHeaders: [:], listedURL: "\(warming.base)/locked", configSHA256: "cf"
                )
            )
            #expect(locked.sha256 == SHA256.hex(SHA256.hash(Array("artifact /locked".utf8))))
        } catch {
            await warming.stop()
            throw error
        }

        // Serve by a manifest that has /locked right and a changed digest for /changed (standing
        // for an artifact that differs from what was locked).
        var changed = locked
        changed.url = "\(warming.base)/unlisted"
        changed.key = changed.url
        changed.size = Int64("artifact /unlisted".utf8.count)
        changed.sha256 = String(repeating: "ab", count: 32)
        let manifest = CacheManifest(entries: [locked, changed])
        let lock = ManifestLock(manifest, problems: [])
        let offline = OfflineMode(forced: true, manifest: lock)
        #expect(lock.count == 2)

        // The same cache, a proxy forced offline with the manifest.
        let server = try await ProxyServer.start(
            ProxyServer.Configuration(listen: ListenAddress(host: "127.0.0.1", port: 0), offline: offline),
            policy: warming.runtime
        )
        do {
            let port = server.boundAddress.port
            let served = try await request("GET \(warming.base)/locked HTTP/1.1\r\nHost: x\r\n\r\n", port: port)
            #expect(served.status == 200)
            #expect(served.bodyText == "artifact /locked")

            let notListed = try await request("GET \(warming.base)/other HTTP/1.1\r\nHost: x\r\n\r\n", port: port)
            #expect(notListed.status == 504)
            #expect(notListed.bodyText.contains("not in the manifest"))

            let client = try await RawClient.connect(port: port)
            defer { client.close() }
            try await client.send("GET \(warming.base)/unlisted HTTP/1.1\r\nHost: x\r\n\r\n")
            try await client.waitForClose()
            let text = client.text
            #expect(text.hasPrefix("HTTP/1.1 200"))
            #expect(text.contains("Content-Length: \("artifact /unlisted".utf8.count)"))
            #expect(!text.hasSuffix("artifact /unlisted"), "the whole body was sent: \(text)")
            #expect(offline.misses.misses.map(\.reason) == [.notInManifest, .manifestMismatch])
            #expect(warming.origin.requestCount == 2)
        } catch {
            await server.shutdown(gracePeriod: .seconds(1))
            await warming.stop()
            throw error
        }
        await server.shutdown(gracePeriod: .seconds(1))
        await warming.stop()
    }

    @Test("A body is held back by one piece and sent whole only when its length and digest match")
    func bodyCheck() {
        let body = Array("0123456789".utf8)
        let entry = CacheManifest.Entry(
            url: "u", key: "u", status: 200, size: 10, sha256: SHA256.hex(SHA256.hash(body)), storedAt: Date(),
            configSHA256: ""
        )
        var check = ManifestBodyCheck(entry)
        #expect(check.pass(ByteBuffer(bytes: body[0..<4])) == nil)
        #expect(check.pass(ByteBuffer(bytes: body[4..<10])) == ByteBuffer(bytes: body[0..<4]))
        let end = check.finish()
        #expect(end.matches)
        #expect(end.last == ByteBuffer(bytes: body[4..<10]))

        var short = ManifestBodyCheck(entry)
        _ = short.pass(ByteBuffer(bytes: body[0..<9]))
        #expect(!short.finish().matches)
        var different = ManifestBodyCheck(entry)
        _ = different.pass(ByteBuffer(bytes: Array("0123456780".utf8)))
        #expect(!different.finish().matches)
    }

    @Test("The miss report counts each request once with its first and last time, as a JSON list")
    func missReport() throws {
        let report = OfflineMissReport()
        let first = Date(timeIntervalSince1970: 1_700_000_000)
        report.record(method: "GET", url: "http://b/", reason: .notCached, at: first)
        report.record(method: "GET", url: "http://a/", reason: .notInManifest, at: first)
        report.record(method: "GET", url: "http://b/", reason: .notCached, at: first.addingTimeInterval(5))
        let misses = report.misses
        #expect(misses.map(\.url) == ["http://a/", "http://b/"])
        #expect(misses[1].count == 2)
        #expect(misses[1].last == first.addingTimeInterval(5))
        let decoded = try JSONSerialization.jsonObject(with: report.json()) as? [[String: Any]]
        #expect(decoded?.count == 2)
        #expect(decoded?[1]["count"] as? Int == 2)
        #expect(decoded?[1]["first"] as? String == "2023-11-14T22:13:20Z")
        #expect(decoded?[0]["reason"] as? String == "not-in-manifest")
        #expect(String(decoding: OfflineMissReport().json(), as: UTF8.self) == "[]\n")
    }
}
