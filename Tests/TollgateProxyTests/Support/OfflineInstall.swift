import Foundation
import Testing
import TollgateTesting

/// `tollgate warm --config CONFIG LOCKFILE` (which must succeed), then the origins stopped and
/// `tollgate serve --offline` started on the same configuration with a miss report
/// (`directory/misses.json`): the build's side of a warmed cache.
func serveOfflineAfterWarming(lockfile: URL, config: URL, directory: URL, origins: [LoopbackOrigin]) async throws -> Served {
    let binary = try #require(tollgateBinary)
    let warm = try await ChildProcess.run(
        binary, ["warm", "--config", config.path, lockfile.path],
        environment: ["XDG_DATA_HOME": directory.appendingPathComponent("data").path]
    )
    #expect(warm.status == 0, "warm: \(warm.stdout) \(warm.stderr)")
    for origin in origins { origin.stop() }
    return try await Served.start(
        ["--config", config.path, "--offline", "--miss-report", directory.appendingPathComponent("misses.json").path],
        directory: directory, lines: 1
    )
}

/// Stops the offline proxy; its miss report, and the GET lines of its access log
/// (`directory/access.log`).
func stopOffline(_ served: Served, directory: URL) async throws -> (misses: String, gets: [Substring]) {
    served.child.send(SIGTERM)
    _ = try await served.child.waitForExit()
    let misses = try String(contentsOf: directory.appendingPathComponent("misses.json"), encoding: .utf8)
    let log = try String(contentsOf: directory.appendingPathComponent("access.log"), encoding: .utf8)
    return (misses.trimmingCharacters(in: .whitespacesAndNewlines), log.split(separator: "\n").filter { $0.contains("\"method\":\"GET\"") })
}
