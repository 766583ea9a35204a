import Foundation
import Testing
import TollgateHTTP
import TollgateTesting

/// `hosts[].request-headers` and `response-headers` through the built executable: what the
/// origin is sent, and what the client gets over HTTP/1.1 and HTTP/2, from the origin and from the
/// cache — whose stored copy keeps the origin's fields.
@Suite("Header fields changed on the way by a host rule (the built executable)", .serialized, .timeLimit(.minutes(1)), .enabled(if: tollgateBinary != nil))
struct HeaderEditsProxyTests {
    /// The configuration: a reverse h2c listener to `origin`, a cache, and when `edits`, the rule's changes.
    private func writeConfiguration(_ file: URL, directory: URL, originPort: Int, edits: Bool) throws {
        let rule = edits
            ? """
            hosts:
              - match: "127.0.0.1"
                request-headers:
                  set: { X-Env: staging, User-Agent: tollgate-gateway }
                  add: { X-Added: one }
                  remove: [X-Debug]
                response-headers:
                  set: { Strict-Transport-Security: "max-age=31536000" }
                  add: { X-Frame-Options: DENY }
                  remove: [Server, X-Powered-By]
            """
            : ""
        try """
            listen:
              - address: "127.0.0.1:0"
                mode: reverse
                upstream: "http://127.0.0.1:\(originPort)"
                h2c: true
            cache:
              path: "\(directory.appendingPathComponent("cache").path)"
            log: { access: off }
            \(rule)
            """.write(to: file, atomically: true, encoding: .utf8)
    }

    /// `curl` of `url` (over HTTP/2 with prior knowledge when `http2`) with the request fields
    /// the rule changes; the response's header lines, lower-cased names.
    private func headers(of url: String, http2: Bool) async throws -> [String: String] {
        let result = try await ChildProcess.run(
            "/usr/bin/curl",
            ["-sS", "--noproxy", "*", http2 ? "--http2-prior-knowledge" : "--http1.1", "-D", "-", "-o", "/dev/null",
             "-H", "X-Debug: 1", "-H", "User-Agent: curl-client", url]
        )
        #expect(result.status == 0, "\(result.stderr)")
        var fields: [String: String] = [:]
        for line in result.stdout.split(separator: "\r\n").dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return fields
    }

    @Test("The origin is sent the rule's request fields; the client gets its response fields on a miss (HTTP/1.1) and a hit (HTTP/2); after a reload without them, the hit has the origin's own")
    func editsOnTheWay() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.send(
                status: 200,
                headers: ["Cache-Control": "max-age=600", "Server": "origin/1.0", "X-Powered-By": "PHP/8", "X-Origin": "yes"],
                body: "ok"
            )
        }
        defer { origin.stop() }
        let file = directory.appendingPathComponent("tollgate.yaml")
        try writeConfiguration(file, directory: directory, originPort: origin.port, edits: true)
        let served = try await Served.start(["--config", file.path], directory: directory, lines: 1)
        defer { served.child.kill() }
        let url = "http://127.0.0.1:\(try served.port("reverse"))/page"

        let miss = try await headers(of: url, http2: false)
        let sent = try #require(origin.requests.first)
        #expect(sent.headerFields["X-Env"] == "staging")
        #expect(sent.headerFields.values(for: "User-Agent") == ["tollgate-gateway"])
        #expect(sent.headerFields["X-Added"] == "one")
        #expect(sent.headerFields["X-Debug"] == nil)
        for response in [miss, try await headers(of: url, http2: true)] {
            #expect(response["strict-transport-security"] == "max-age=31536000", "\(response)")
            #expect(response["x-frame-options"] == "DENY", "\(response)")
            #expect(response["server"] == nil && response["x-powered-by"] == nil, "\(response)")
            #expect(response["x-origin"] == "yes", "\(response)")
        }
        #expect(origin.requestCount == 1, "the second is a hit")

        try writeConfiguration(file, directory: directory, originPort: origin.port, edits: false)
        served.child.send(SIGHUP)
        try await eventuallyAsync("the hit without the rule's changes") {
            (try? await headers(of: url, http2: true))?["server"] == "origin/1.0"
        }
        let plain = try await headers(of: url, http2: true)
        #expect(plain["x-powered-by"] == "PHP/8" && plain["strict-transport-security"] == nil, "\(plain)")
        #expect(plain["cache-status"]?.contains("hit") == true, "\(plain)")
        #expect(origin.requestCount == 1)
    }
}
