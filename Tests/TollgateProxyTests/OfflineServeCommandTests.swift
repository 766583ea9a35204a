import Foundation
import NIOConcurrencyHelpers
import Testing
import TollgateCache
import TollgateHTTP
import TollgateTesting

/// A warmed cache in a temporary directory: an origin with a small artifact (stored inline)
/// and a large one (stored in a body file), a configuration with a forward listener, an admin
/// listener and a JSON access log, and `warm --manifest` run over both.
struct WarmedCache {
    let directory: URL
    let origin: LoopbackOrigin
    let config: URL
    let manifest: URL
    let accessLog: URL
    let large: [UInt8]
    var base: String { "http://127.0.0.1:\(origin.port)" }
    let environment: [String: String]
    /// The origin's port once it stopped (``stopOrigin()``).
    private let heldPort = NIOLockedValueBox<ClosedPort?>(nil)

    static let small = "small artifact"

    static func make() async throws -> WarmedCache {
        let directory = try temporaryDirectory()
        let large = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }
        let origin = try await LoopbackOrigin.start { request, respond in
            switch request.path {
            case "/large.bin": respond.send(status: 200, headers: ["Cache-Control": "max-age=600"], bytes: large)
            default: respond.send(status: 200, headers: ["Cache-Control": "max-age=600"], body: small)
            }
        }
        let config = directory.appendingPathComponent("tollgate.yaml")
        let accessLog = directory.appendingPathComponent("access.log")
        try """
        listen:
          - address: "127.0.0.1:0"
        admin:
          address: "127.0.0.1:0"
        cache:
          path: "\(directory.appendingPathComponent("cache").path)"
        log:
          access: "\(accessLog.path)"
          format: json
        """.write(to: config, atomically: true, encoding: .utf8)
        let list = directory.appendingPathComponent("urls.txt")
        let base = "http://127.0.0.1:\(origin.port)"
        try "\(base)/small.txt\n\(base)/large.bin\n".write(to: list, atomically: true, encoding: .utf8)
        let manifest = directory.appendingPathComponent("manifest.json")
        let environment = ["XDG_DATA_HOME": directory.appendingPathComponent("data").path]
        let warmed = try await ChildProcess.run(
            try #require(tollgateBinary), ["warm", "--config", config.path, "--manifest", manifest.path, list.path],
            environment: environment
        )
        #expect(warmed.status == 0, "\(warmed.stdout) \(warmed.stderr)")
        #expect(warmed.stderr.contains("manifest \(manifest.path): 2 entries written"), "\(warmed.stderr)")
        return WarmedCache(
            directory: directory, origin: origin, config: config, manifest: manifest, accessLog: accessLog, large: large,
            environment: environment
        )
    }

    /// `tollgate ARGUMENTS` to its end.
    func run(_ arguments: [String]) async throws -> (status: Int32, stdout: String, stderr: String) {
        try await ChildProcess.run(try #require(tollgateBinary), arguments, environment: environment)
    }

    /// `tollgate serve --config … ARGUMENTS`, under `strace` (connect calls to `trace`) when given.
    func serve(_ arguments: [String], trace: URL? = nil) async throws -> Served {
        try await Served.start(
            ["--config", config.path] + arguments, directory: directory, lines: 2, environment: environment,
            launcher: trace.map { ["/usr/bin/strace", "-f", "-qq", "-e", "trace=connect", "-o", $0.path] } ?? []
        )
    }

    /// The large artifact's body file in the cache.
    func largeBodyFile() throws -> URL {
        let bodies = directory.appendingPathComponent("cache/bodies")
        let name = try #require(try FileManager.default.contentsOfDirectory(atPath: bodies.path).first { $0.hasSuffix(".body") })
        return bodies.appendingPathComponent(name)
    }

    func remove() {
        origin.stop()
        heldPort.withLockedValue { $0 = nil }
        try? FileManager.default.removeItem(at: directory)
    }

    /// Stops the origin and keeps its port from the next listener bound to port 0: an offline
    /// proxy started next once got it, and refused the warmed URLs as requests to itself.
    func stopOrigin() {
        origin.stop()
        heldPort.withLockedValue { $0 = ClosedPort(holding: origin.port) }
    }
}

@Suite(
    "Warm, then serve offline by the manifest (the built executable)",
    .serialized,
    .timeLimit(.minutes(2)),
    .enabled(if: tollgateBinary != nil)
)
struct OfflineServeCommandTests {
    @Test("The warmed artifacts are served byte for byte with the origin gone, misses reported, and no connect at all")
    func servedOfflineByTheManifest() async throws {
        let warmed = try await WarmedCache.make()
        defer { warmed.remove() }
        let manifest = try CacheManifest.load(contentsOf: warmed.manifest.path)
        #expect(manifest.entries.map(\.url) == ["\(warmed.base)/large.bin", "\(warmed.base)/small.txt"])
        #expect(manifest.entries[0].sha256 == SHA256.hex(SHA256.hash(warmed.large)))
        #expect(manifest.entries[0].size == 300_000)
        #expect(manifest.entries[1].sha256 == SHA256.hex(SHA256.hash(Array(WarmedCache.small.utf8))))

        let verified = try await warmed.run(["cache", "verify", "--config", warmed.config.path, "--manifest", warmed.manifest.path])
        #expect(verified.status == 0, "\(verified.stdout) \(verified.stderr)")
        #expect(verified.stdout.contains("2 entries, 0 missing or different"))

        warmed.stopOrigin()
        let trace: URL? =
            FileManager.default.isExecutableFile(atPath: "/usr/bin/strace")
            ? warmed.directory.appendingPathComponent("connect.trace") : nil
        let report = warmed.directory.appendingPathComponent("misses.json")
        let served = try await warmed.serve(
            ["--offline", "--manifest", warmed.manifest.path, "--miss-report", report.path], trace: trace
        )
        defer { served.child.kill() }
        let port = try served.port("forward")

        let small = try await request("GET \(warmed.base)/small.txt HTTP/1.1\r\nHost: x\r\n\r\n", port: port)
        #expect(small.status == 200)
        #expect(small.bodyText == WarmedCache.small)
        #expect(small.header("Cache-Status") == "tollgate; hit; detail=\"offline\"")
        let large = try await request("GET \(warmed.base)/large.bin HTTP/1.1\r\nHost: x\r\n\r\n", port: port)
        #expect(large.status == 200)
        #expect(large.body == warmed.large)

        let miss = try await request("GET \(warmed.base)/not-warmed HTTP/1.1\r\nHost: x\r\n\r\n", port: port)
        #expect(miss.status == 504)
        #expect(miss.header("Tollgate-Error") == "offline-miss")
        #expect(miss.bodyText.contains("\(warmed.base)/not-warmed"))
        let named = try await request("GET https://deps.example.invalid/lib.tgz HTTP/1.1\r\nHost: x\r\n\r\n", port: port)
        #expect(named.status == 504)
        let tunnel = try await request("CONNECT deps.example.invalid:443 HTTP/1.1\r\nHost: x\r\n\r\n", port: port)
        #expect(tunnel.status == 504)
        #expect(tunnel.header("Tollgate-Error") == "offline-miss")

        let misses = try await request("GET /offline/misses HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: try served.port("admin"))
        #expect(misses.status == 200)
        let listed = try #require(try JSONSerialization.jsonObject(with: Data(misses.body)) as? [[String: Any]])
        #expect(
            listed.compactMap { $0["url"] as? String }.sorted()
                == ["\(warmed.base)/not-warmed", "deps.example.invalid:443", "https://deps.example.invalid/lib.tgz"].sorted()
        )

        // Under strace the signal goes to tollgate itself, strace's child.
        let children = try? String(
            contentsOfFile: "/proc/\(served.child.processIdentifier)/task/\(served.child.processIdentifier)/children",
            encoding: .utf8
        )
        if trace != nil, let pid = children?.split(separator: " ").first.flatMap({ Int32($0) }) {
            kill(pid, SIGTERM)
        } else {
            served.child.send(SIGTERM)
        }
        #expect(try await served.child.waitForExit() == 0, "\(served.child.standardError)")
        let written = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: report)) as? [[String: Any]])
        #expect(written.count == 3)
        #expect(written.first { ($0["url"] as? String) == "\(warmed.base)/not-warmed" }?["reason"] as? String == "not-in-manifest")
        let log = try String(contentsOf: warmed.accessLog, encoding: .utf8)
        #expect(log.components(separatedBy: "\"error\":\"offline-miss\"").count - 1 == 3, "\(log)")

        if let trace {
            // Every connect the proxy made: none may reach out (an internet address, or the name
            // service, which a lookup asks first).
            let calls = try String(contentsOf: trace, encoding: .utf8).split(separator: "\n").filter { $0.contains("connect(") }
            let outward = calls.filter { $0.contains("AF_INET") || $0.contains("nscd") || $0.contains("AF_NETLINK") }
            #expect(outward.isEmpty, "connects while offline:\n\(outward.joined(separator: "\n"))")
        }
    }

    @Test("A body changed on disk is caught by cache verify, while it is sent, and at the next start")
    func tamperedBody() async throws {
        let warmed = try await WarmedCache.make()
        defer { warmed.remove() }
        warmed.stopOrigin()
        let served = try await warmed.serve(["--offline", "--manifest", warmed.manifest.path])
        defer { served.child.kill() }
        #expect(!served.child.standardError.contains("tollgate: manifest:"), "\(served.child.standardError)")

        // Changed behind the running proxy's back: one byte, same length.
        let file = try warmed.largeBodyFile()
        var bytes = try Data(contentsOf: file)
        bytes[150_000] ^= 0x55
        try bytes.write(to: file)

        let client = try await RawClient.connect(port: try served.port("forward"))
        defer { client.close() }
        try await client.send("GET \(warmed.base)/large.bin HTTP/1.1\r\nHost: x\r\n\r\n")
        try await client.waitForClose()
        #expect(client.text.hasPrefix("HTTP/1.1 200"))
        #expect(client.text.contains("Content-Length: 300000"))
        let headEnd = try #require(client.received.firstRange(of: Array("\r\n\r\n".utf8)))
        #expect(client.received.count - headEnd.upperBound < 300_000, "the changed body was sent whole")
        served.child.send(SIGTERM)
        _ = try await served.child.waitForExit()
        #expect(served.child.standardError.contains("the body sent is not the manifest's"), "\(served.child.standardError)")

        let verified = try await warmed.run(["cache", "verify", "--config", warmed.config.path, "--manifest", warmed.manifest.path])
        #expect(verified.status == 1)
        #expect(verified.stdout.contains("digest-differs  \(warmed.base)/large.bin"), "\(verified.stdout)")

        let again = try await warmed.serve(["--offline", "--manifest", warmed.manifest.path])
        defer { again.child.kill() }
        try await eventually("the start-up check's report") {
            again.child.standardError.contains("tollgate: manifest: \(warmed.base)/large.bin: digest-differs")
        }
        let refused = try await request("GET \(warmed.base)/large.bin HTTP/1.1\r\nHost: x\r\n\r\n", port: try again.port("forward"))
        #expect(refused.status == 502)
        #expect(refused.header("Tollgate-Error") == "manifest-mismatch")
        let small = try await request("GET \(warmed.base)/small.txt HTTP/1.1\r\nHost: x\r\n\r\n", port: try again.port("forward"))
        #expect(small.bodyText == WarmedCache.small)
    }

    @Test("A cache warmed by URL serves a reverse listener offline, whatever Host its clients send (stored without X-Forwarded-Host)")
    func warmedCacheServesAReverseListener() async throws {
        let warmed = try await WarmedCache.make()
        defer { warmed.remove() }
        warmed.stopOrigin()
        let served = try await warmed.serve(["--offline", "--listen", "127.0.0.1:0", "--reverse", warmed.base])
        defer { served.child.kill() }
        let port = try served.port("reverse")
        for host in ["mirror.example", "127.0.0.1:8080"] {
            let small = try await request("GET /small.txt HTTP/1.1\r\nHost: \(host)\r\n\r\n", port: port)
            #expect(small.status == 200, "\(host)")
            #expect(small.bodyText == WarmedCache.small)
            #expect(small.header("Cache-Status") == "tollgate; hit; detail=\"offline\"")
        }
    }

    @Test("offline: true put in force by SIGHUP: stored responses served with the origin gone, the rest 504")
    func offlineByReload() async throws {
        let warmed = try await WarmedCache.make()
        defer { warmed.remove() }
        let served = try await warmed.serve([])
        defer { served.child.kill() }
        let port = try served.port("forward")
        let online = try await request("GET \(warmed.base)/fresh-online HTTP/1.1\r\nHost: x\r\n\r\n", port: port)
        #expect(online.header("Cache-Status") == "tollgate; fwd=uri-miss; stored")

        let text = try String(contentsOf: warmed.config, encoding: .utf8)
        try ("offline: true\n" + text).write(to: warmed.config, atomically: true, encoding: .utf8)
        served.child.send(SIGHUP)
        try await eventually("the reload") { served.child.standardError.contains("configuration reloaded") }
        warmed.stopOrigin()

        let stored = try await request("GET \(warmed.base)/fresh-online HTTP/1.1\r\nHost: x\r\n\r\n", port: port)
        #expect(stored.status == 200)
        #expect(stored.header("Cache-Status") == "tollgate; hit; detail=\"offline\"")
        let miss = try await request("GET \(warmed.base)/other HTTP/1.1\r\nHost: x\r\n\r\n", port: port)
        #expect(miss.status == 504)
        #expect(miss.header("Tollgate-Error") == "offline-miss")

        // A manifest locks what an offline proxy serves; given to one that is not offline, it is refused.
        let onlineConfig = warmed.directory.appendingPathComponent("online.yaml")
        try "listen:\n  - address: \"127.0.0.1:0\"\n".write(to: onlineConfig, atomically: true, encoding: .utf8)
        let refused = try await warmed.run(["serve", "--config", onlineConfig.path, "--manifest", warmed.manifest.path])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("add --offline"), "\(refused.stderr)")
    }
}
