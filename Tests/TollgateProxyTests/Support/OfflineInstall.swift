import Foundation
import Testing
import TollgateTesting

/// `tollgate warm --config CONFIG LOCKFILE` (which must succeed), then the origins stopped and
/// `tollgate serve --offline` started on the same configuration with a miss report
/// (`directory/misses.json`): the build's side of a warmed cache.
func serveOfflineAfterWarming(
    lockfile: URL, config: URL, directory: URL, origins: [LoopbackOrigin], warmArguments: [String] = []
) async throws -> Served {
    let binary = try #require(tollgateBinary)
    let warm = try await ChildProcess.run(
        binary, ["warm", "--config", config.path] + warmArguments + [lockfile.path],
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

/// A registry host a test intercepts: its name, the test CA of its origin's certificate, and the
/// origin's port.
typealias InterceptedRegistry = (host: String, pki: TestPKI, port: Int)

/// A configuration `directory/CACHE.yaml` for a package manager through the proxy: a forward
/// listener on a free port, the cache in `directory/CACHE`, a JSON access log
/// `directory/access.log`, interception by a CA in `directory/ca` (made by `tollgate ca init` on
/// first use), and each registry host intercepted, trusted by its test CA and, online, connected
/// to its origin. Returns the file and the interception CA's certificate, for the package manager
/// to trust.
///
/// `hostSettings` adds YAML lines (mapping entries, `key: value`) to a host's rule, `cacheSettings`
/// to `cache`.
func interceptingConfiguration(
    directory: URL, registries: [InterceptedRegistry], cache: String = "cache",
    hostSettings: [String: [String]] = [:], cacheSettings: [String] = []
) async throws -> (config: URL, caFile: String) {
    let caDirectory = directory.appendingPathComponent("ca").path
    if !FileManager.default.fileExists(atPath: caDirectory + "/ca.pem") {
        let created = try await ChildProcess.run(try #require(tollgateBinary), ["ca", "init", "--dir", caDirectory])
        #expect(created.status == 0, "\(created.stderr)")
    }
    var hosts = ""
    for registry in registries {
        hosts += """

              - match: "\(registry.host)"
                intercept: true
                connect-to: "127.0.0.1:\(registry.port)"
                trust: { roots: ["\(registry.pki.caFile)"] }
            """
        for line in hostSettings[registry.host] ?? [] { hosts += "\n    " + line }
    }
    let cacheLines = cacheSettings.map { "\n  " + $0 }.joined()
    let config = directory.appendingPathComponent("\(cache).yaml")
    try """
        listen:
          - address: "127.0.0.1:0"
        cache:
          path: "\(directory.appendingPathComponent(cache).path)"\(cacheLines)
        interception:
          ca-dir: "\(caDirectory)"
        log:
          access: "\(directory.appendingPathComponent("access.log").path)"
          format: json
        hosts:\(hosts)
        """.write(to: config, atomically: true, encoding: .utf8)
    return (config, caDirectory + "/ca.pem")
}
