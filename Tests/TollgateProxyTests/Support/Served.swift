import Foundation
import Testing
import TollgateTesting

/// A running `tollgate serve` and the listeners it printed.
struct Served {
    let child: ChildProcess
    /// Address by mode, from the `listening on ADDRESS (MODE)` lines, in order.
    let listeners: [(host: String, port: Int, mode: String)]

    /// Starts `tollgate serve ARGUMENTS` with its cache in `directory`, and waits for `lines`
    /// listening lines. `environment` adds to the child's; `launcher` runs it under another
    /// program (`["/usr/bin/strace", …]`), which is then the child.
    static func start(
        _ arguments: [String], directory: URL, lines: Int, environment: [String: String] = [:], launcher: [String] = []
    ) async throws -> Served {
        let binary = try #require(tollgateBinary)
        let command = launcher + [binary, "serve"] + arguments
        let child = try ChildProcess(
            command[0],
            Array(command.dropFirst()),
            environment: ["XDG_CACHE_HOME": directory.appendingPathComponent("xdg").path].merging(environment) { $1 }
        )
        do {
            try await eventually("\(lines) listening lines") {
                child.standardOutput.filter { $0 == "\n" }.count >= lines || !child.isRunning
            }
        } catch {
            child.kill()
            throw error
        }
        let listeners = child.standardOutput.split(separator: "\n").compactMap { line -> (String, Int, String)? in
            guard let match = line.wholeMatch(of: #/listening on (\S+):(\d+) \((\w+)\)/#), let port = Int(match.2)
            else {
                return nil
            }
            return (String(match.1), port, String(match.3))
        }
        return Served(child: child, listeners: listeners)
    }

    func port(_ mode: String) throws -> Int {
        try #require(listeners.first { $0.mode == mode }, "no \(mode) listener in \(child.standardOutput)").port
    }

    func host(_ mode: String) throws -> String {
        try #require(listeners.first { $0.mode == mode }).host
    }
}

/// Writes `directory/tollgate.yaml`: one forward listener on 127.0.0.1 (any port) and a cache in
/// `directory/cache`, then `more` (top-level YAML). Returns the file.
func writeForwardCacheConfiguration(in directory: URL, more: String = "") throws -> URL {
    let file = directory.appendingPathComponent("tollgate.yaml")
    try """
        listen:
          - address: "127.0.0.1:0"
        cache:
          path: "\(directory.appendingPathComponent("cache").path)"
        \(more)
        """.write(to: file, atomically: true, encoding: .utf8)
    return file
}

/// Writes `directory/tollgate.yaml`: one reverse listener on 127.0.0.1 (any port) to the origin
/// on `upstreamPort`, a cache in `directory/cache` with `cacheLines` (YAML lines under `cache:`,
/// e.g. `max-size: 64MiB`), and `more` (top-level YAML) after it. Returns the file.
func writeReverseCacheConfiguration(
    in directory: URL, upstreamPort: Int, cacheLines: [String] = [], more: String = ""
) throws -> URL {
    let file = directory.appendingPathComponent("tollgate.yaml")
    let cache = ["path: \"\(directory.appendingPathComponent("cache").path)\""] + cacheLines
    try """
        listen:
          - address: "127.0.0.1:0"
            mode: reverse
            upstream: "http://127.0.0.1:\(upstreamPort)"
        cache:
        \(cache.map { "  " + $0 }.joined(separator: "\n"))
        \(more)
        """.write(to: file, atomically: true, encoding: .utf8)
    return file
}

/// A temporary directory, removed by `remove()`.
func temporaryDirectory() throws -> URL {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-serve-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory
}

/// One request to `host:port` on a new connection; its response.
func request(_ text: String, host: String = "127.0.0.1", port: Int) async throws -> RawResponse {
    let client = try await RawClient.connect(host: host, port: port)
    defer { client.close() }
    try await client.send(text)
    return try #require(try await client.waitForResponses(1).first)
}

