import Foundation
import NIOCore
import Testing
import TollgateCache
import TollgateHTTP
import TollgateTesting

@Suite(
    "tollgate warm on background sessions: killed and run again, progress, --json",
    .serialized,
    .timeLimit(.minutes(2)),
    .enabled(if: tollgateBinary != nil)
)
struct WarmBackgroundTests {
    static let big = (0..<600_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 11) }

    @Test("kill -9 in the middle of a slow download, run again: finished URLs are fresh hits, the cut one goes on from its offset with Range/If-Range, byte-exact; a second warm meanwhile is refused")
    func killedAndRunAgain() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let small = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, headers: ["Cache-Control": "max-age=600"], body: "small \(request.path)")
        }
        defer { small.stop() }
        let origin = try await RangeOrigin.start(body: Self.big)
        defer { origin.stop() }
        // The big one stalls after 200 000 bytes: the warm is killed while it waits.
        origin.cutNext(after: 200_000, stall: true)
        let config = try writeForwardCacheConfiguration(in: directory)
        let list = directory.appendingPathComponent("urls.txt")
        try "\(small.url("/a.txt"))\n\(small.url("/b.txt"))\n\(origin.url)\n".write(to: list, atomically: true, encoding: .utf8)
        let binary = try #require(tollgateBinary)
        let data = directory.appendingPathComponent("data").path
        let environment = ["XDG_DATA_HOME": data]
        let arguments = ["warm", "--config", config.path, "--concurrency", "1", "--background-id", "ci", list.path]

        let first = try ChildProcess(binary, arguments, environment: environment)
        defer { first.kill() }
        let files = data + "/tollgate/background/ci.default/files"
        try await eventually("the big download's partial file holds what was sent", timeout: .seconds(20)) {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: files)) ?? []
            return names.contains { Self.size(files + "/" + $0) == 200_000 }
        }
        #expect(small.requestCount == 2)

        // While it runs, another warm of the same list is refused (one live session per identifier).
        let second = try await ChildProcess.run(binary, arguments, environment: environment)
        #expect(second.status == 1)
        #expect(second.stderr.contains("in use"), "\(second.stderr)")

        try await Task.sleep(for: .milliseconds(300))  // the record of the response is committed
        first.send(SIGKILL)
        #expect(try await first.waitForExit() == -SIGKILL)

        let report = directory.appendingPathComponent("report.json")
        let manifest = directory.appendingPathComponent("manifest.json")
        let again = try await ChildProcess.run(
            binary, arguments + ["--json", report.path, "--manifest", manifest.path], environment: environment
        )
        #expect(again.status == 0, "\(again.stdout) \(again.stderr)")
        #expect(again.stdout.contains("warmed 3 of 3 URLs: 1 stored, 2 already fresh, 0 not stored, 0 failed, 1 resumed"), "\(again.stdout)")
        #expect(small.requestCount == 2, "finished URLs are not fetched again")
        #expect(again.stdout.contains("206  tollgate; fwd=uri-miss; stored; detail=\"combined\"  \(origin.url)"), "\(again.stdout)")
        #expect(origin.rangesAsked == [nil, "bytes=200000-"])
        #expect(!again.stderr.contains("tollgate warm:"), "no live display without a terminal: \(again.stderr)")
        // What the cache holds is the whole body, byte for byte.
        let text = try String(contentsOf: manifest, encoding: .utf8)
        #expect(text.contains(SHA256.hex(SHA256.hash(Self.big))), "\(text)")

        let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: report)) as? [String: Any])
        let summary = try #require(json["summary"] as? [String: Any])
        #expect(summary["urls"] as? Int == 3)
        #expect(summary["resumed"] as? Int == 1)
        #expect(summary["fresh"] as? Int == 2)
        let entries = try #require(json["urls"] as? [[String: Any]])
        let bigEntry = try #require(entries.first { $0["url"] as? String == origin.url.absoluteString })
        #expect(bigEntry["outcome"] as? String == "stored")
        #expect(bigEntry["status"] as? Int == 206)
        #expect(bigEntry["resumed_from"] as? Int == 200_000)
        #expect(bigEntry["bytes"] as? Int == Self.big.count)
        #expect(bigEntry["error"] is NSNull)
        let smallEntry = try #require(entries.first { $0["url"] as? String == small.url("/a.txt").absoluteString })
        #expect(smallEntry["outcome"] as? String == "fresh")
        #expect(smallEntry["cache_status"] as? String == "tollgate; hit")
        #expect(smallEntry["resumed_from"] is NSNull)
        #expect((smallEntry["duration_ms"] as? Int).map { $0 >= 0 } == true)

        // Nothing is left to pick up: the background records went with the tasks.
        let leftovers = (try? FileManager.default.contentsOfDirectory(atPath: files)) ?? []
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    @Test("SIGTERM stops a warm where it is (exit 143, a line saying how to go on); run again, it goes on from its offset")
    func interruptedAndRunAgain() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try await RangeOrigin.start(body: Self.big)
        defer { origin.stop() }
        origin.cutNext(after: 250_000, stall: true)
        let setup = try WarmSetup(in: directory, urls: [origin.url.absoluteString])
        let (arguments, environment, manifest) = (setup.arguments, setup.environment, setup.manifest)
        let binary = try #require(tollgateBinary)
        let first = try ChildProcess(binary, arguments, environment: environment)
        defer { first.kill() }
        try await eventually("the partial file holds what was sent", timeout: .seconds(20)) { setup.holdsPartial(of: 250_000) }
        first.terminate()
        #expect(try await first.waitForExit() == 143)
        #expect(first.standardError.contains("interrupted after 0 of 1 URLs; run the same command again"), "\(first.standardError)")

        let again = try await ChildProcess.run(binary, arguments, environment: environment)
        #expect(again.status == 0, "\(again.stdout) \(again.stderr)")
        #expect(origin.rangesAsked == [nil, "bytes=250000-"])
        #expect(again.stdout.contains("1 stored, 0 already fresh, 0 not stored, 0 failed, 1 resumed"), "\(again.stdout)")
        #expect(try String(contentsOf: manifest, encoding: .utf8).contains(SHA256.hex(SHA256.hash(Self.big))))
    }

    @Test("On a terminal (a pseudo-terminal here) a live display on standard error shows the URLs, bytes and each active transfer; --progress never turns it off")
    func progressOnATerminal() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let half = [UInt8](repeating: 0x61, count: 100_000)
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.sendHead(status: 200, headers: ["Content-Length": "200000", "Cache-Control": "max-age=600"])
            respond.write(half)
            respond.after(.milliseconds(1500)) { respond.write(half) }
        }
        defer { origin.stop() }
        let config = try writeForwardCacheConfiguration(in: directory)
        let list = directory.appendingPathComponent("urls.txt")
        try "\(origin.url("/slow.bin"))\n".write(to: list, atomically: true, encoding: .utf8)
        let binary = try #require(tollgateBinary)
        let environment = ["XDG_DATA_HOME": directory.appendingPathComponent("data").path]
        func underTerminal(_ extra: String) async throws -> (status: Int32, stdout: String, stderr: String) {
            // script(1) runs the command on a pseudo-terminal: its standard error is a terminal.
            let command = "\"\(binary)\" warm --config \"\(config.path)\" \(extra) \"\(list.path)\""
            return try await ChildProcess.run("/usr/bin/script", ["-qfec", command, "/dev/null"], environment: environment)
        }
        let shown = try await underTerminal("")
        #expect(shown.status == 0, "\(shown.stdout)")
        #expect(shown.stdout.contains("tollgate warm: 0 of 1 URLs done"), "\(shown.stdout)")
        #expect(shown.stdout.contains("  slow.bin  97.7 KiB of 195.3 KiB"), "\(shown.stdout)")
        #expect(shown.stdout.contains("\u{1B}[J"), "the display is redrawn in place")
        #expect(shown.stdout.contains("warmed 1 of 1 URLs"))

        let silent = try await underTerminal("--progress never")
        #expect(silent.status == 0, "\(silent.stdout)")
        #expect(!silent.stdout.contains("tollgate warm:"), "\(silent.stdout)")
        #expect(silent.stdout.contains("warmed 1 of 1 URLs: 0 stored, 1 already fresh"))
    }

    @Test("Killed at arbitrary moments while bytes and records are being written, three times over, a warm still ends byte-exact, each run going on from where the last one's file ended")
    func killedAtArbitraryMoments() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let body = (0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 1) }
        let origin = try await RangeOrigin.start(body: body)
        defer { origin.stop() }
        origin.pace(16_384, every: .milliseconds(5))
        let setup = try WarmSetup(in: directory, urls: [origin.url.absoluteString])
        let (arguments, environment, manifest, files) = (setup.arguments, setup.environment, setup.manifest, setup.files)
        let binary = try #require(tollgateBinary)
        var kills = 0
        for delay in [130, 210, 170] {
            let requestsBefore = origin.requestCount
            let run = try ChildProcess(binary, arguments, environment: environment)
            defer { run.kill() }
            // Once this run's request reached the origin, bytes flow: kill it a moment later, mid-write.
            try await eventually("the run's request arrives", timeout: .seconds(20)) { origin.requestCount > requestsBefore }
            try await Task.sleep(for: .milliseconds(delay))
            guard run.isRunning else { break }
            run.send(SIGKILL)
            _ = try await run.waitForExit()
            kills += 1
            let sizes = ((try? FileManager.default.contentsOfDirectory(atPath: files)) ?? []).map { Self.size(files + "/" + $0) }
            #expect(sizes.count <= 1, "one partial file at most: \(sizes)")
        }
        #expect(kills >= 2, "the transfer was too quick to be killed")
        let last = try await ChildProcess.run(binary, arguments, environment: environment)
        #expect(last.status == 0, "\(last.stdout) \(last.stderr)")
        #expect(last.stdout.contains("1 stored") && last.stdout.contains("1 resumed"), "\(last.stdout)")
        let text = try String(contentsOf: manifest, encoding: .utf8)
        #expect(text.contains(SHA256.hex(SHA256.hash(body))), "\(text)")
        // Each run after the first asked for the rest, from further on each time.
        let offsets = origin.rangesAsked.dropFirst().compactMap { $0.flatMap { Int($0.dropFirst(6).dropLast()) } }
        #expect(offsets.count == origin.rangesAsked.count - 1, "\(origin.rangesAsked)")
        #expect(offsets == offsets.sorted() && offsets.allSatisfy { $0 > 0 }, "\(origin.rangesAsked)")
    }

    /// A forward-cache configuration, a list of `urls`, a data directory and the arguments of
    /// `tollgate warm` on background id `ci` with a manifest (`extra` before the list).
    struct WarmSetup {
        let directory: URL
        let environment: [String: String]
        let manifest: URL
        let arguments: [String]
        /// Where the `default` session's partial downloads are.
        let files: String

        init(in directory: URL, urls: [String], extra: [String] = []) throws {
            self.directory = directory
            let config = try writeForwardCacheConfiguration(in: directory)
            let list = directory.appendingPathComponent("urls.txt")
            try urls.map { $0 + "\n" }.joined().write(to: list, atomically: true, encoding: .utf8)
            let data = directory.appendingPathComponent("data").path
            environment = ["XDG_DATA_HOME": data]
            manifest = directory.appendingPathComponent("manifest.json")
            arguments = ["warm", "--config", config.path, "--background-id", "ci", "--manifest", manifest.path] + extra + [list.path]
            files = data + "/tollgate/background/ci.default/files"
        }

        /// Whether a partial file of exactly `bytes` bytes is there.
        func holdsPartial(of bytes: Int) -> Bool {
            ((try? FileManager.default.contentsOfDirectory(atPath: files)) ?? []).contains { WarmBackgroundTests.size(files + "/" + $0) == bytes }
        }
    }

    static func size(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? -1
    }
}
