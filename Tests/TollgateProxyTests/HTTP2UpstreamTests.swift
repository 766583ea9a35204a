import Foundation
import Testing
import TollgateHTTP
import TollgateTesting

/// The proxy's session speaking h2 to an h2-only origin (nghttpd), through the built executable:
/// the client side stays HTTP/1.1, the access log tells the upstream protocol.
@Suite(
    "HTTP/2 upstream through the proxy (nghttpd, the built executable)",
    .serialized,
    .timeLimit(.minutes(1)),
    .enabled(if: tollgateBinary != nil && NGHTTPDOrigin.isInstalled, "needs the tollgate executable and nghttpd")
)
struct HTTP2UpstreamTests {
    /// A forward proxy logging JSON, trusting the test CA for 127.0.0.1, with `http2` for that host.
    static func serve(pki: TestPKI, http2: String, in directory: URL, upstreamProxy: Int? = nil) async throws -> (Served, Int) {
        let file = directory.appendingPathComponent("tollgate.yaml")
        let parent = upstreamProxy.map { "sessions:\n  default:\n    upstream-proxy: \"http://127.0.0.1:\($0)\"\n" } ?? ""
        try """
            listen:
              - address: "127.0.0.1:0"
            cache:
              path: "\(directory.appendingPathComponent("cache").path)"
            log:
              format: json
            \(parent)
            hosts:
              - match: "127.0.0.1"
                http2: \(http2)
                trust:
                  roots: ["\(pki.caFile)"]
            """.write(to: file, atomically: true, encoding: .utf8)
        let served = try await Served.start(["--config", file.path], directory: directory, lines: 1)
        return (served, try served.port("forward"))
    }

    /// The JSON log line whose target ends with `path`.
    static func logLine(_ served: Served, _ path: String) async throws -> [String: Any] {
        var found: [String: Any]?
        try await eventually("the log line of \(path)") {
            found = served.child.standardError.split(separator: "\n").lazy.compactMap { line in
                try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            }.first { ($0["target"] as? String)?.hasSuffix(path) == true }
            return found != nil
        }
        return found ?? [:]
    }

    @Test("An https request through the proxy goes to the origin over h2; the log says upstream_protocol h2 and the second one reused")
    func logsH2() async throws {
        let pki = try TestPKI()
        let origin = try await NGHTTPDOrigin.start(pki: pki, files: ["p.txt": Data("from h2".utf8), "q.txt": Data("again".utf8)])
        defer { origin.stop() }
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (served, proxy) = try await Self.serve(pki: pki, http2: "auto", in: directory)
        defer { served.child.kill() }
        let target = "https://127.0.0.1:\(origin.port)"
        let response = try await request("GET \(target)/p.txt HTTP/1.1\r\nHost: 127.0.0.1:\(origin.port)\r\n\r\n", port: proxy)
        #expect(response.status == 200)
        #expect(response.bodyText == "from h2")
        #expect(response.header("Via")?.contains("2 tollgate") == true)
        let line = try await Self.logLine(served, "/p.txt")
        #expect(line["upstream_protocol"] as? String == "h2")
        #expect(line["reused"] as? Bool == false)
        let second = try await request("GET \(target)/q.txt HTTP/1.1\r\nHost: 127.0.0.1:\(origin.port)\r\n\r\n", port: proxy)
        #expect(second.bodyText == "again")
        let secondLine = try await Self.logLine(served, "/q.txt")
        #expect(secondLine["upstream_protocol"] as? String == "h2")
        #expect(secondLine["reused"] as? Bool == true)
        #expect(origin.sessionCount == 1)
    }

    @Test("With http2: off for the host, the h2-only origin cannot be reached: a 502, and no request reaches it")
    func offFails() async throws {
        let pki = try TestPKI()
        let origin = try await NGHTTPDOrigin.start(pki: pki, files: ["p.txt": Data("from h2".utf8)])
        defer { origin.stop() }
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (served, proxy) = try await Self.serve(pki: pki, http2: "off", in: directory)
        defer { served.child.kill() }
        let response = try await request(
            "GET https://127.0.0.1:\(origin.port)/p.txt HTTP/1.1\r\nHost: 127.0.0.1:\(origin.port)\r\n\r\n", port: proxy
        )
        #expect(response.status == 502)
        #expect(!origin.process.standardOutput.contains("recv HEADERS"))
    }

    @Test("Through the proxy, a GET and uploads the origin refused (REFUSED_STREAM) are sent again and answered, whether the refusal came before the body's end or after it")
    func refusedThroughTheProxy() async throws {
        guard PythonH2Origin.python != nil else { return }  // needs python3 with h2 (`make deps`)
        let pki = try TestPKI()
        let origin = try await PythonH2Origin.start(pki: pki, mode: "refuse")
        defer { origin.stop() }
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (served, proxy) = try await Self.serve(pki: pki, http2: "auto", in: directory)
        defer { served.child.kill() }
        let authority = "127.0.0.1:\(origin.port)"
        let get = try await request("GET https://\(authority)/rst-get HTTP/1.1\r\nHost: \(authority)\r\n\r\n", port: proxy)
        #expect(get.status == 200)
        #expect(get.bodyText.hasPrefix("GET /rst-get 0 conn"))
        #expect((await origin.lines("refused", path: "/rst-get", atLeast: 1)).count == 1)
        #expect((await origin.lines("answered", path: "/rst-get", atLeast: 1)).count == 1)
        // The client's body streams through once; the proxy kept it (5 bytes) and sends it again.
        let upload = try await request(
            "POST https://\(authority)/rst-upload HTTP/1.1\r\nHost: \(authority)\r\nContent-Length: 5\r\n\r\nhello", port: proxy
        )
        #expect(upload.status == 200)
        #expect(upload.bodyText.hasPrefix("POST /rst-upload 5 conn"), "\(upload.bodyText)")
        #expect((await origin.lines("refused", path: "/rst-upload", atLeast: 1)).count == 1)
        #expect((await origin.lines("answered", path: "/rst-upload", atLeast: 1)).count == 1)
        let large = try await request(
            "POST https://\(authority)/rst-large HTTP/1.1\r\nHost: \(authority)\r\nContent-Length: 100000\r\n\r\n"
                + String(repeating: "x", count: 100_000),
            port: proxy
        )
        // Under 256 KiB, kept whole: what arrived before the refusal goes first on the new
        // stream, any rest as it comes.
        #expect(large.status == 200)
        #expect(large.bodyText.hasPrefix("POST /rst-large 100000 conn"), "\(large.bodyText)")
        #expect((await origin.lines("refused", path: "/rst-large", atLeast: 1)).count == 1)
        #expect((await origin.lines("answered", path: "/rst-large", atLeast: 1)).count == 1)
        // Past 256 KiB, kept in a temporary file: read back in turn, the client's next pieces
        // following from the file once the replay has caught up.
        let huge = try await request(
            "POST https://\(authority)/rst-huge HTTP/1.1\r\nHost: \(authority)\r\nContent-Length: 3000000\r\n\r\n"
                + String(repeating: "y", count: 3_000_000),
            port: proxy
        )
        #expect(huge.status == 200)
        #expect(huge.bodyText.hasPrefix("POST /rst-huge 3000000 conn"), "\(huge.bodyText)")
        #expect((await origin.lines("refused", path: "/rst-huge", atLeast: 1)).count == 1)
        #expect((await origin.lines("answered", path: "/rst-huge", atLeast: 1)).count == 1)
    }

    @Test("With upstream-proxy set, https requests reach the h2-only origin as h2 streams of ONE tunnel through the parent")
    func throughTheParentsTunnel() async throws {
        let pki = try TestPKI()
        let origin = try await NGHTTPDOrigin.start(pki: pki, files: ["a.txt": Data("one".utf8), "b.txt": Data("two".utf8)])
        defer { origin.stop() }
        let parent = try await PythonConnectProxy.start()
        defer { parent.stop() }
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (served, proxy) = try await Self.serve(pki: pki, http2: "auto", in: directory, upstreamProxy: parent.port)
        defer { served.child.kill() }
        let authority = "127.0.0.1:\(origin.port)"
        for (path, body) in [("/a.txt", "one"), ("/b.txt", "two")] {
            let response = try await request("GET https://\(authority)\(path) HTTP/1.1\r\nHost: \(authority)\r\n\r\n", port: proxy)
            #expect(response.status == 200)
            #expect(response.bodyText == body)
        }
        #expect(try await Self.logLine(served, "/a.txt")["upstream_protocol"] as? String == "h2")
        let second = try await Self.logLine(served, "/b.txt")
        #expect(second["upstream_protocol"] as? String == "h2")
        #expect(second["reused"] as? Bool == true)
        #expect(parent.tunnels == ["127.0.0.1:\(origin.port)"])
        #expect(origin.sessionCount == 1)
    }
}
