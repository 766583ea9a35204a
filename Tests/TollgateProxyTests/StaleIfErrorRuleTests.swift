import Foundation
import NIOConcurrencyHelpers
import Testing
import TollgateHTTP
import TollgatePolicy
import TollgateTesting

@Suite(
    "A rule's cache.stale-if-error: the cache answers for an origin that is down (the built executable)",
    .timeLimit(.minutes(1)),
    .enabled(if: tollgateBinary != nil && FileManager.default.isExecutableFile(atPath: "/usr/bin/curl"))
)
struct StaleIfErrorRuleTests {
    @Test("curl through the proxy gets the stored response when the origin answers 503 and when it is gone; a host without the rule gets the 503")
    func servedWhileDown() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let failing = NIOLockedValueBox(false)
        let origin = try await LoopbackOrigin.start { request, respond in
            if failing.withLockedValue({ $0 }) {
                respond.send(status: 503, body: "down")
            } else {
                respond.send(status: 200, headers: ["Cache-Control": "max-age=0", "ETag": "\"1\""], body: "artifact \(request.target)")
            }
        }
        let config = directory.appendingPathComponent("tollgate.yaml")
        try """
        listen:
          - address: "127.0.0.1:0"
        cache:
          path: "\(directory.appendingPathComponent("cache").path)"
        log:
          access: "\(directory.appendingPathComponent("access.log").path)"
          format: json
        hosts:
          - match: "127.0.0.1"
            cache: { stale-if-error: 1d }
        """.write(to: config, atomically: true, encoding: .utf8)
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 1)
        defer { served.child.kill() }
        let proxy = "http://127.0.0.1:\(try served.port("forward"))"
        func curl(_ url: String) async throws -> (status: String, cacheStatus: String, body: String) {
            let result = try await ChildProcess.run(
                "/usr/bin/curl",
                ["-sS", "--max-time", "20", "--proxy", proxy, "-D", "-", url]
            )
            let parts = result.stdout.components(separatedBy: "\r\n\r\n")
            let head = parts.first ?? ""
            let status = head.split(separator: "\r\n").first.map(String.init) ?? ""
            let cacheStatus = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("cache-status:") }.map { String($0.dropFirst(14)) } ?? ""
            return (status, cacheStatus, parts.dropFirst().joined(separator: "\r\n\r\n"))
        }
        let url = "http://127.0.0.1:\(origin.port)/lib.tgz"
        #expect(try await curl(url).body == "artifact /lib.tgz")

        failing.withLockedValue { $0 = true }
        let on503 = try await curl(url)
        #expect(on503.status == "HTTP/1.1 200 OK", "\(on503)")
        #expect(on503.body == "artifact /lib.tgz")
        #expect(on503.cacheStatus.contains("fwd=stale"), "\(on503.cacheStatus)")
        #expect(on503.cacheStatus.contains("stale-if-error"), "\(on503.cacheStatus)")
        // Another host (localhost, same origin) has no rule: the origin's 503 reaches the client.
        let other = "http://localhost:\(origin.port)/lib.tgz"
        failing.withLockedValue { $0 = false }
        _ = try await curl(other)
        failing.withLockedValue { $0 = true }
        #expect(try await curl(other).status == "HTTP/1.1 503 Service Unavailable")

        origin.stop()
        let gone = try await curl(url)
        #expect(gone.status == "HTTP/1.1 200 OK", "\(gone)")
        #expect(gone.body == "artifact /lib.tgz")
        #expect(try await curl(other).status == "HTTP/1.1 502 Bad Gateway")
    }

    @Test("check-config reads stale-if-error as a duration, refuses it beside store: deny, and explain says what it does")
    func configuration() throws {
        let configuration = try PolicyLoader(checkFiles: false).load(
            yaml: """
                hosts:
                  - match: "registry.example"
                    cache: { stale-if-error: 2h }
                """,
            file: "t.yaml",
            baseDirectory: "/"
        )
        #expect(configuration.hosts.first?.cache.staleIfError == .seconds(7200))
        let text = PolicyDecisions(configuration: configuration).explain(HTTPURL(string: "https://registry.example/x")!)
        #expect(text.contains("stale-if-error: 2h"), "\(text)")
        let failure = #expect(throws: PolicyLoader.Failure.self) {
            try PolicyLoader(checkFiles: false).load(
                yaml: """
                    hosts:
                      - match: "registry.example"
                        cache: { store: deny, stale-if-error: 2h }
                    """,
                file: "t.yaml",
                baseDirectory: "/"
            )
        }
        #expect(failure?.problems.first?.key == "hosts[0].cache.stale-if-error")
        #expect(throws: PolicyLoader.Failure.self) {
            try PolicyLoader(checkFiles: false).load(
                yaml: "hosts:\n  - match: a\n    cache: { stale-if-error: soon }\n",
                file: "t.yaml",
                baseDirectory: "/"
            )
        }
    }
}
