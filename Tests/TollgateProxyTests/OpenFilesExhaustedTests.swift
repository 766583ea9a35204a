import Foundation
import Testing
import TollgateTesting

/// `tollgate serve` out of file descriptors, and the limit it starts with.
@Suite("Out of file descriptors (the built executable)", .serialized, .timeLimit(.minutes(1)), .enabled(if: tollgateBinary != nil))
struct OpenFilesExhaustedTests {
    /// CPU time (user + system, in clock ticks) the process has used.
    private func cpuTicks(_ pid: Int32) throws -> Int {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        // Fields after the command's closing parenthesis: state is field 3, utime 14, stime 15.
        let fields = stat[stat.index(after: try #require(stat.lastIndex(of: ")")))...].split(separator: " ")
        return (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0)
    }

    /// The soft and hard `Max open files` of a process.
    private func openFileLimits(_ pid: Int32) throws -> (soft: String, hard: String) {
        let limits = try String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8)
        let line = try #require(limits.split(separator: "\n").first { $0.hasPrefix("Max open files") })
        let fields = line.dropFirst("Max open files".count).split(separator: " ")
        return (String(fields[0]), String(fields[1]))
    }

    @Test("With every descriptor in use, accepting pauses (no core spun, one warning) and clients are served once some close")
    func acceptingPausesWhenExhausted() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "served") }
        defer { origin.stop() }
        let config = try writeForwardCacheConfiguration(in: directory)
        // Soft and hard limit 64: serve cannot raise it.
        let served = try await Served.start(
            ["--config", config.path], directory: directory, lines: 1,
            launcher: ["/bin/sh", "-c", "ulimit -n 64 && exec \"$@\"", "sh"]
        )
        defer { served.child.kill() }
        let port = try served.port("forward")
        let pid = served.child.pid
        #expect(try openFileLimits(pid) == ("64", "64"))

        var clients: [RawClient] = []
        for _ in 0..<90 { clients.append(try await RawClient.connect(port: port)) }
        try await eventually("the warning") { served.child.standardError.contains("cannot accept connections: Too many open files") }
        let before = try cpuTicks(pid)
        try await Task.sleep(for: .seconds(2))
        let spent = try cpuTicks(pid) - before
        // A spinning accept loop takes a whole core: about 200 ticks in two seconds.
        #expect(spent < 40, "\(spent) clock ticks of CPU in 2 s while no descriptor was free")
        #expect(served.child.standardError.components(separatedBy: "cannot accept connections").count == 2, "logged once")

        for client in clients { client.close() }
        // The paused listener looks again within a second; the closed clients' descriptors are
        // free by then.
        try await Task.sleep(for: .milliseconds(1500))
        let after = try await request("GET http://127.0.0.1:\(origin.port)/after HTTP/1.1\r\nHost: x\r\n\r\n", port: port)
        #expect(after.status == 200)
    }

    @Test("serve raises its soft open-file limit to the hard one")
    func raisesTheSoftLimit() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = try writeForwardCacheConfiguration(in: directory)
        let served = try await Served.start(
            ["--config", config.path], directory: directory, lines: 1,
            launcher: ["/bin/sh", "-c", "ulimit -S -n 256 && ulimit -H -n 4096 && exec \"$@\"", "sh"]
        )
        defer { served.child.kill() }
        #expect(try openFileLimits(served.child.pid) == ("4096", "4096"))
    }
}
