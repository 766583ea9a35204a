import Foundation
import TollgateTesting
import Testing

/// The event-loop threads (`NIO-SGLTN-…`) of a running process, from /proc.
private func loopThreads(of pid: Int32) -> Int {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
    return tasks.filter { task in
        let name = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/comm", encoding: .utf8)) ?? ""
        return name.hasPrefix("NIO-SGLTN")
    }.count
}

@Suite(
    "Event loops follow the CPU affinity (the built executable)",
    .serialized,
    .timeLimit(.minutes(1)),
    .enabled(if: tollgateBinary != nil && FileManager.default.isExecutableFile(atPath: "/usr/bin/taskset"))
)
struct EventLoopSizingTests {
    @Test("serve pinned to one CPU runs one event loop; NIO_SINGLETON_GROUP_LOOP_COUNT still wins")
    func pinnedToOneCPU() async throws {
        let binary = try #require(tollgateBinary)
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        for (environment, expected) in [([String: String](), 1), (["NIO_SINGLETON_GROUP_LOOP_COUNT": "3"], 3)] {
            var environment = environment
            environment["XDG_CACHE_HOME"] = directory.appendingPathComponent("xdg").path
            let child = try ChildProcess(
                "/usr/bin/taskset", ["-c", "0", binary, "serve", "--listen", "127.0.0.1:0"], environment: environment
            )
            defer { child.kill() }
            try await eventually("the listening line") { child.standardOutput.contains("listening on") || !child.isRunning }
            #expect(loopThreads(of: child.processIdentifier) == expected, "\(environment)")
        }
    }
}
