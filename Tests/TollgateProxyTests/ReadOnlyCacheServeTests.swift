import Foundation
import Testing
import TollgateTesting

#if canImport(Glibc)
import Glibc
#endif

/// A warmed cache served as it is, writing nothing to it: `cache.read-only: true`, and an offline
/// proxy given a cache directory it may not write (a read-only mount, another user's copy).
@Suite("Serving a cache read-only (the built executable)", .serialized, .timeLimit(.minutes(2)), .enabled(if: tollgateBinary != nil))
struct ReadOnlyCacheServeTests {
    @Test("cache.read-only: hits served, a miss fetched and passed on unstored, warm refused, not a byte of the cache changed")
    func readOnlyByConfiguration() async throws {
        let warmed = try await WarmedCache.make()
        defer { warmed.remove() }
        let cache = warmed.directory.appendingPathComponent("cache")
        let before = try directoryContents(cache.path, excluding: ["lock.mdb"])
        let text = try String(contentsOf: warmed.config, encoding: .utf8)
        try text.replacingOccurrences(of: "cache:\n", with: "cache:\n  read-only: true\n").write(to: warmed.config, atomically: true, encoding: .utf8)

        let served = try await warmed.serve([])
        defer { served.child.kill() }
        #expect(served.child.standardError.contains("(shared, 1 GiB, read-only)"), "\(served.child.standardError)")
        let port = try served.port("forward")
        let small = try await request("GET \(warmed.base)/small.txt HTTP/1.1\r\nHost: x\r\n\r\n", port: port)
        #expect(small.header("Cache-Status") == "tollgate; hit")
        #expect(small.bodyText == WarmedCache.small)
        let large = try await request("GET \(warmed.base)/large.bin HTTP/1.1\r\nHost: x\r\n\r\n", port: port)
        #expect(large.body == warmed.large)
        for _ in 0..<2 {
            let miss = try await request("GET \(warmed.base)/not-warmed HTTP/1.1\r\nHost: x\r\n\r\n", port: port)
            #expect(miss.status == 200)
            #expect(miss.header("Cache-Status") == "tollgate; fwd=uri-miss; detail=\"read-only\"")
        }
        let purge = try await request(
            "POST /cache/purge?url=\(warmed.base)/small.txt HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n",
            port: try served.port("admin")
        )
        #expect(purge.status == 409)
        let stats = try await request("GET /cache/stats HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: try served.port("admin"))
        #expect(stats.bodyText.contains("\"read_only\":true,\"offline\":false"), "\(stats.bodyText)")
        served.child.send(SIGTERM)
        #expect(try await served.child.waitForExit() == 0)
        let log = try String(contentsOf: warmed.accessLog, encoding: .utf8)
        #expect(log.contains("\"not_stored_reason\":\"read-only\""), "\(log)")

        let warm = try await warmed.run(["warm", "--config", warmed.config.path, warmed.directory.appendingPathComponent("urls.txt").path])
        #expect(warm.status == 1)
        #expect(warm.stderr.contains("cache.read-only is set"), "\(warm.stderr)")
        #expect(try directoryContents(cache.path, excluding: ["lock.mdb"]) == before)
    }

    @Test("An offline proxy that may not write its cache directory serves it read-only; online it is refused with the way out")
    func offlineOnACacheItMayNotWrite() async throws {
        let warmed = try await WarmedCache.make()
        defer { warmed.remove() }
        warmed.stopOrigin()
        let cache = warmed.directory.appendingPathComponent("cache")
        try FileManager.default.removeItem(at: cache.appendingPathComponent("lock.mdb"))  // as a copy of it would be
        let before = try directoryContents(cache.path, excluding: ["lock.mdb"])
        // Not writable by the proxy: as root (who may write anything) the proxy runs as nobody on
        // a copy others may read; otherwise the copy's write permissions are taken away.
        var launcher: [String] = []
        var environment = warmed.environment
        let runsAsRoot = getuid() == 0
        if runsAsRoot {
            guard FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"), try othersMayRun(try #require(tollgateBinary)) else {
                return  // nobody could not start the binary here: nothing to check
            }
            launcher = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
            let data = warmed.directory.appendingPathComponent("nobody-data")
            try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
            #expect(chown(data.path, 65534, 65534) == 0)
            environment["XDG_DATA_HOME"] = data.path
            try setPermissions(under: cache, directories: 0o755, files: 0o644)
        } else {
            try setPermissions(under: cache, directories: 0o555, files: 0o444)
        }
        defer { try? setPermissions(under: cache, directories: 0o700, files: 0o600) }
        // The access log goes where the proxy may write it.
        let logs = warmed.directory.appendingPathComponent("logs")
        try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
        if runsAsRoot { #expect(chown(logs.path, 65534, 65534) == 0) }
        let config = warmed.directory.appendingPathComponent("offline.yaml")
        try String(contentsOf: warmed.config, encoding: .utf8)
            .replacingOccurrences(of: warmed.accessLog.path, with: logs.appendingPathComponent("access.log").path)
            .write(to: config, atomically: true, encoding: .utf8)
        #expect(chmod(config.path, 0o644) == 0)
        #expect(chmod(warmed.manifest.path, 0o644) == 0)

        let command = launcher + [try #require(tollgateBinary)]
        func run(_ arguments: [String]) async throws -> (status: Int32, stdout: String, stderr: String) {
            try await ChildProcess.run(command[0], Array(command.dropFirst()) + arguments, environment: environment)
        }
        let refused = try await run(["serve", "--config", config.path])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("set cache.read-only: true or run --offline"), "\(refused.stderr)")
        let stats = try await run(["cache", "stats", "--config", config.path])
        #expect(stats.status == 0, "\(stats.stderr)")
        #expect(stats.stdout.contains("entries: 2"), "\(stats.stdout)")
        let verified = try await run(["cache", "verify", "--config", config.path, "--manifest", warmed.manifest.path])
        #expect(verified.status == 0, "\(verified.stdout) \(verified.stderr)")

        let served = try await Served.start(
            ["--config", config.path, "--offline"], directory: warmed.directory, lines: 2, environment: environment, launcher: launcher
        )
        defer { served.child.kill() }
        #expect(served.child.standardError.contains("read-only)"), "\(served.child.standardError)")
        let port = try served.port("forward")
        let small = try await request("GET \(warmed.base)/small.txt HTTP/1.1\r\nHost: x\r\n\r\n", port: port)
        #expect(small.header("Cache-Status") == "tollgate; hit; detail=\"offline\"")
        let large = try await request("GET \(warmed.base)/large.bin HTTP/1.1\r\nHost: x\r\n\r\n", port: port)
        #expect(large.body == warmed.large)
        let miss = try await request("GET \(warmed.base)/not-warmed HTTP/1.1\r\nHost: x\r\n\r\n", port: port)
        #expect(miss.status == 504)
        served.child.send(SIGTERM)
        #expect(try await served.child.waitForExit() == 0)
        #expect(try directoryContents(cache.path, excluding: ["lock.mdb"]) == before)
        // The access log counts the offline miss a miss (Cache-Status has no fwd reason for it).
        let log = try String(contentsOf: logs.appendingPathComponent("access.log"), encoding: .utf8)
        let missLine = try #require(log.split(separator: "\n").first { $0.contains("/not-warmed") })
        #expect(missLine.contains("\"cache\":\"miss\""), "\(missLine)")
        #expect(missLine.contains("\"not_stored_reason\":\"error\""), "\(missLine)")
        #expect(missLine.contains("\"error\":\"offline-miss\""), "\(missLine)")
    }

    /// Sets the mode of `directory`, every directory under it and every file under it.
    private func setPermissions(under directory: URL, directories: mode_t, files: mode_t) throws {
        let enumerator = try #require(FileManager.default.enumerator(atPath: directory.path))
        var paths: [(String, Bool)] = []
        while let name = enumerator.nextObject() as? String {
            var isDirectory: ObjCBool = false
            let path = directory.appendingPathComponent(name).path
            _ = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
            paths.append((path, isDirectory.boolValue))
        }
        // Directories last going down, first going up: a directory made unreadable hides nothing yet.
        for (path, isDirectory) in paths where !isDirectory { chmod(path, files) }
        for (path, isDirectory) in paths.reversed() where isDirectory { chmod(path, directories) }
        chmod(directory.path, directories)
    }

    /// Whether a user who is neither owner nor in the group may run `binary`: it and every
    /// directory above it let others in.
    private func othersMayRun(_ binary: String) throws -> Bool {
        var path = URL(fileURLWithPath: binary).resolvingSymlinksInPath().path
        while !path.isEmpty, path != "/" {
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            guard let mode = (attributes[.posixPermissions] as? NSNumber)?.uint16Value, mode & 0o001 != 0 else { return false }
            path = (path as NSString).deletingLastPathComponent
        }
        return true
    }
}
