import Foundation
import Testing
import TollgateHTTP
import TollgateTesting

@Suite("Ranges through the proxy: curl -C - resumes, the cache answers ranges", .timeLimit(.minutes(2)))
struct RangeProxyTests {
    static let body = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 11 &+ 5) }

    /// Runs `body` with a range origin and `tollgate serve` (a forward listener with a cache in a
    /// temporary directory), all stopped and removed afterwards.
    func withServedProxy(_ body: (RangeOrigin, URL, Int) async throws -> Void) async throws {
        let origin = try await RangeOrigin.start(body: Self.body)
        defer { origin.stop() }
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = try writeForwardCacheConfiguration(in: directory)
        let served = try await Served.start(["--config", config.path], directory: directory, lines: 1)
        defer { served.child.kill() }
        try await body(origin, directory, try served.port("forward"))
    }

    func curl(_ arguments: [String], proxyPort: Int) async throws -> (status: Int32, stdout: String, stderr: String) {
        try await ChildProcess.run("/usr/bin/curl", ["-s", "-S", "--noproxy", "", "-x", "http://127.0.0.1:\(proxyPort)"] + arguments)
    }

    @Test("A download cut through the proxy resumes with curl -C -, byte-exact; the cache then holds it whole")
    func curlResumes() async throws {
        try await withServedProxy { origin, directory, port in
            let output = directory.appendingPathComponent("artifact.bin").path

            origin.cutNext(after: 120_000)
            let cut = try await curl(["-o", output, origin.url.absoluteString], proxyPort: port)
            #expect(cut.status != 0, "the cut transfer should fail: \(cut.stderr)")
            let partial = try #require(FileManager.default.contents(atPath: output))
            #expect(partial.count == 120_000)
            #expect([UInt8](partial) == Array(Self.body[0..<120_000]))

            let resumed = try await curl(["-C", "-", "-o", output, origin.url.absoluteString], proxyPort: port)
            #expect(resumed.status == 0, "curl -C - failed: \(resumed.stderr)")
            #expect(origin.rangesAsked.last == "bytes=120000-")
            let whole = try #require(FileManager.default.contents(atPath: output))
            #expect([UInt8](whole) == Self.body)

            // The prefix kept from the cut response and the 206 combine (off the loop): a GET is then a hit.
            // The probes say only-if-cached, so one made before the combine ends gets a 504 from the
            // cache instead of going to the origin (which would make the count below depend on timing).
            let probe = directory.appendingPathComponent("probe.bin").path
            var hit = false
            for _ in 0..<50 where !hit {
                let result = try await curl(
                    ["-H", "Cache-Control: only-if-cached", "-D", "-", "-o", probe, origin.url.absoluteString],
                    proxyPort: port
                )
                hit = result.stdout.contains("tollgate; hit")
                if !hit { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(hit)
            #expect(FileManager.default.contents(atPath: probe).map { [UInt8]($0) } == Self.body)
            #expect(origin.requestCount == 2)
        }
    }

    @Test("A stored response answers curl's ranges through the proxy without the origin: 206, suffix, 416")
    func rangesFromTheCache() async throws {
        try await withServedProxy { origin, directory, port in
            let url = origin.url.absoluteString
            let warm = try await curl(["-o", "/dev/null", url], proxyPort: port)
            #expect(warm.status == 0)

            let out = directory.appendingPathComponent("range.bin").path
            let part = try await curl(["-r", "1000-1999", "-D", "-", "-o", out, url], proxyPort: port)
            #expect(part.stdout.hasPrefix("HTTP/1.1 206"), "\(part.stdout)")
            #expect(part.stdout.contains("Content-Range: bytes 1000-1999/300000"))
            #expect(part.stdout.contains("tollgate; hit"))
            #expect(FileManager.default.contents(atPath: out).map { [UInt8]($0) } == Array(Self.body[1_000..<2_000]))

            let suffix = try await curl(["-r", "-100", "-o", out, url], proxyPort: port)
            #expect(suffix.status == 0)
            #expect(FileManager.default.contents(atPath: out).map { [UInt8]($0) } == Array(Self.body[299_900...]))

            let past = try await curl(["-H", "Range: bytes=300000-", "-D", "-", "-o", "/dev/null", url], proxyPort: port)
            #expect(past.stdout.hasPrefix("HTTP/1.1 416"), "\(past.stdout)")
            #expect(past.stdout.contains("Content-Range: bytes */300000"))
            #expect(origin.requestCount == 1)
        }
    }

    @Test("After a cut download, a plain curl is answered whole while the proxy asks the origin only for the missing bytes")
    func plainGETCompletesPieces() async throws {
        try await withServedProxy { origin, directory, port in
            let output = directory.appendingPathComponent("artifact.bin").path
            origin.cutNext(after: 120_000)
            let cut = try await curl(["-o", output, origin.url.absoluteString], proxyPort: port)
            #expect(cut.status != 0, "the cut transfer should fail: \(cut.stderr)")

            // The prefix is kept off the loop after the cut (a sync and an LMDB commit): give it that long.
            try await Task.sleep(for: .milliseconds(300))
            let answer = try await curl(["-D", "-", "-o", output, origin.url.absoluteString], proxyPort: port)
            #expect(answer.stdout.hasPrefix("HTTP/1.1 200"), "\(answer.stdout)")
            #expect(answer.stdout.contains("Cache-Status: tollgate; fwd=partial; fwd-status=206; stored"), "\(answer.stdout)")
            #expect(FileManager.default.contents(atPath: output).map { [UInt8]($0) } == Self.body)
            #expect(origin.rangesAsked == [nil, "bytes=120000-299999"])
        }
    }
}
