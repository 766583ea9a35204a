import Foundation
import Testing
import TollgateHTTP
import TollgateTesting

/// The JSON access log's per-exchange fields and `GET /har`, through the built executable.
@Suite(
    "Per-exchange records: the JSON access log and HAR (the built executable)",
    .serialized,
    .timeLimit(.minutes(1)),
    .enabled(if: tollgateBinary != nil, "the tollgate executable was not found next to the tests or in .build/debug")
)
struct ExchangeRecordTests {
    /// An origin answering by path, a forward proxy logging JSON with an admin listener.
    struct Setup {
        let directory: URL
        let origin: LoopbackOrigin
        let served: Served
        let proxy: Int
        let admin: Int

        static func start(cacheSize: String = "64MiB") async throws -> Setup {
            let directory = try temporaryDirectory()
            let origin = try await LoopbackOrigin.start { request, respond in
                switch request.path {
                case "/stored": respond.send(status: 200, headers: ["Cache-Control": "max-age=300"], body: "stored")
                case "/validated":
                    if request.headerFields["If-None-Match"] == "\"v1\"" {
                        respond.send(status: 304, headers: ["ETag": "\"v1\"", "Cache-Control": "max-age=0"])
                    } else {
                        respond.send(status: 200, headers: ["ETag": "\"v1\"", "Cache-Control": "max-age=0"], body: "v1")
                    }
                case "/no-store": respond.send(status: 200, headers: ["Cache-Control": "no-store"], body: "x")
                case "/private": respond.send(status: 200, headers: ["Cache-Control": "private, max-age=60"], body: "x")
                case "/vary-star": respond.send(status: 200, headers: ["Cache-Control": "max-age=60", "Vary": "*"], body: "x")
                case "/big":
                    respond.send(
                        status: 200, headers: ["Cache-Control": "max-age=60"], body: String(repeating: "b", count: 200_000)
                    )
                default: respond.send(status: 404, body: "no")
                }
            }
            let file = directory.appendingPathComponent("tollgate.yaml")
            try """
                listen:
                  - address: "127.0.0.1:0"
                admin:
                  address: "127.0.0.1:0"
                cache:
                  path: "\(directory.appendingPathComponent("cache").path)"
                  max-size: \(cacheSize)
                log:
                  format: json
                  har-entries: 50
                """.write(to: file, atomically: true, encoding: .utf8)
            let served = try await Served.start(["--config", file.path], directory: directory, lines: 2)
            return Setup(
                directory: directory, origin: origin, served: served, proxy: try served.port("forward"),
                admin: try served.port("admin")
            )
        }

        func get(_ path: String, port: Int? = nil, headers: String = "") async throws -> RawResponse {
            let target = "http://127.0.0.1:\(port ?? origin.port)\(path)"
            return try await request("GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n\(headers)\r\n", port: proxy)
        }

        /// The JSON log line of the `n`th exchange (0-based) whose target ends with `path`.
        func logLine(_ path: String, _ n: Int = 0) async throws -> [String: Any] {
            var found: [[String: Any]] = []
            try await eventually("the log line of \(path) #\(n)") {
                found = served.child.standardError.split(separator: "\n").compactMap { line in
                    guard line.hasPrefix("{"),
                        let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                        (object["target"] as? String)?.hasSuffix(path) == true
                    else { return nil }
                    return object
                }
                return found.count > n
            }
            return found[n]
        }

        func stop() {
            served.child.kill()
            origin.stop()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    @Test("A miss that is stored logs cache miss, stored true, the upstream's protocol, address and timings")
    func missIsLogged() async throws {
        let setup = try await Setup.start()
        defer { setup.stop() }
        #expect(try await setup.get("/stored").status == 200)
        let line = try await setup.logLine("/stored")
        #expect(line["cache"] as? String == "miss")
        #expect(line["stored"] as? Bool == true)
        #expect(line["not_stored_reason"] is NSNull)
        #expect(line["upstream_protocol"] as? String == "http/1.1")
        #expect(line["upstream_address"] as? String == "127.0.0.1:\(setup.origin.port)")
        #expect(line["reused"] as? Bool == false)
        #expect(line["error"] is NSNull)
        let timings = try #require(line["timings"] as? [String: Any])
        #expect(timings["tls_ms"] is NSNull, "plain HTTP has no TLS phase")
        #expect((timings["connect_ms"] as? Double).map { $0 >= 0 } == true)
        #expect((timings["ttfb_ms"] as? Double).map { $0 >= 0 } == true)
        #expect((timings["transfer_ms"] as? Double).map { $0 >= 0 } == true)
        #expect(Set(timings.keys) == ["dns_ms", "connect_ms", "tls_ms", "ttfb_ms", "transfer_ms"])
    }

    @Test("A hit logs cache hit, not stored without a reason, and no upstream")
    func hitIsLogged() async throws {
        let setup = try await Setup.start()
        defer { setup.stop() }
        _ = try await setup.get("/stored")
        #expect(try await setup.get("/stored").header("Cache-Status") == "tollgate; hit")
        // Lines are written as exchanges end: the miss ends when its task has committed the body,
        // a moment after its client had it all, so the hit asked for then may be logged first.
        let first = try await setup.logLine("/stored", 0)
        let second = try await setup.logLine("/stored", 1)
        #expect(Set([first, second].compactMap { $0["cache"] as? String }) == ["miss", "hit"])
        let line = (first["cache"] as? String) == "hit" ? first : second
        #expect(line["cache"] as? String == "hit")
        #expect(line["stored"] as? Bool == false)
        #expect(line["not_stored_reason"] is NSNull)
        #expect(line["upstream_address"] is NSNull)
        #expect(line["reused"] is NSNull)
        let timings = try #require(line["timings"] as? [String: Any])
        #expect(timings["connect_ms"] is NSNull)
        #expect(timings["dns_ms"] is NSNull)
    }

    @Test("A revalidation answered 304 logs cache revalidated on a reused upstream connection")
    func revalidationIsLogged() async throws {
        let setup = try await Setup.start()
        defer { setup.stop() }
        _ = try await setup.get("/validated")
        let second = try await setup.get("/validated")
        #expect(second.bodyText == "v1")
        let line = try await setup.logLine("/validated", 1)
        #expect(line["cache"] as? String == "revalidated")
        #expect(line["not_stored_reason"] is NSNull)
        #expect(line["upstream_address"] as? String == "127.0.0.1:\(setup.origin.port)")
        #expect(line["reused"] as? Bool == true, "the proxy keeps its upstream connection alive")
    }

    @Test(
        "A response that is not stored logs why",
        arguments: [("/no-store", "no-store"), ("/private", "private"), ("/vary-star", "vary-star"), ("/big", "size-limit")]
    )
    func notStoredReasons(path: String, reason: String) async throws {
        let setup = try await Setup.start(cacheSize: "1MiB")
        defer { setup.stop() }
        #expect(try await setup.get(path).status == 200)
        let line = try await setup.logLine(path)
        #expect(line["cache"] as? String == "miss")
        #expect(line["stored"] as? Bool == false)
        #expect(line["not_stored_reason"] as? String == reason)
    }

    @Test("A request with credentials is not stored: not_stored_reason authorization")
    func authorizationIsNotStored() async throws {
        let setup = try await Setup.start()
        defer { setup.stop() }
        _ = try await setup.get("/stored", headers: "Authorization: Basic YTpi\r\n")
        let line = try await setup.logLine("/stored")
        #expect(line["stored"] as? Bool == false)
        #expect(line["not_stored_reason"] as? String == "authorization")
    }

    @Test("A failure logs its error code, not stored for an error, and no timings of a connection")
    func failureIsLogged() async throws {
        let setup = try await Setup.start()
        defer { setup.stop() }
        // A port bound and never listened on (a stopped origin's port can be taken by a test
        // running beside this one, which then answers).
        let closed = ClosedPort()
        defer { withExtendedLifetime(closed) {} }
        let response = try await setup.get("/gone", port: closed.port)
        #expect(response.status == 502)
        let line = try await setup.logLine("/gone")
        #expect(line["status"] as? Int == 502)
        #expect(line["error"] as? String == "upstream-unreachable")
        #expect(line["stored"] as? Bool == false)
        #expect(line["not_stored_reason"] as? String == "error")
        #expect(line["upstream_address"] is NSNull)
    }
}
