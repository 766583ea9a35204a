import Foundation
import Testing
import TollgateHTTP
import TollgateTesting

/// The package's root folder (this file is Tests/TollgateProxyTests/ClusterTests.swift).
let packageRoot: URL = {
    var url = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { url.deleteLastPathComponent() }
    return url
}()

/// HAProxy from PATH's usual places, if installed (`make deps` installs Debian's).
let haproxyBinary: String? = ["/usr/sbin/haproxy", "/usr/bin/haproxy", "/usr/local/sbin/haproxy"]
    .first { FileManager.default.isExecutableFile(atPath: $0) }

/// The tier of deploy/cluster: three `tollgate serve` instances behind HAProxy with consistent
/// hashing on the URL, started on 127.0.0.1 by `deploy/cluster/try-local.sh` with the `tollgate`
/// the other command-line tests run.
@Suite(
    "deploy/cluster: three instances behind HAProxy (try-local.sh)",
    .serialized,
    .timeLimit(.minutes(3)),
    .enabled(if: tollgateBinary != nil, "the tollgate executable was not found next to the tests or in .build/debug"),
    .enabled(if: haproxyBinary != nil, "haproxy is not installed (make deps installs it)")
)
struct ClusterTests {
    /// Distinct URLs asked through the front.
    static let urlCount = 45

    @Test("haproxy.cfg is valid for HAProxy (haproxy -c)")
    func haproxyConfigurationIsValid() async throws {
        let result = try await ChildProcess.run(
            try #require(haproxyBinary),
            ["-c", "-f", packageRoot.appendingPathComponent("deploy/cluster/haproxy.cfg").path]
        )
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    }

    @Test(
        "45 cacheable URLs asked twice through the front reach the origin once each; with one instance stopped every URL is still served and only that instance's URLs are fetched again"
    )
    func eachObjectIsFetchedOncePerCluster() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, headers: ["Cache-Control": "max-age=600"], body: "object \(request.target)")
        }
        defer { origin.stop() }
        let paths = (1...Self.urlCount).map { "/objects/\($0)?v=\($0)" }
        func countsByPath() -> [String: Int] {
            Dictionary(origin.requests.map { ($0.target, 1) }, uniquingKeysWith: +)
        }

        try await withCluster { cluster in
            // First round: every URL is a miss somewhere; second round: a hit where it was stored.
            for path in paths {
                let response = try await cluster.get(origin.url(path).absoluteString)
                // One failure here is enough to know: stop at the first.
                try #require(
                    response.status == 200 && response.bodyText == "object \(path)",
                    "\(path): \(response.status) \(response.bodyText)"
                )
            }
            for path in paths {
                let response = try await cluster.get(origin.url(path).absoluteString)
                #expect(response.status == 200 && response.bodyText == "object \(path)", "\(path): \(response.status)")
                #expect(response.header("Cache-Status")?.contains("hit") == true, "\(path): \(response.headers)")
            }
            let counts = countsByPath()
            #expect(counts.count == Self.urlCount)
            #expect(counts.values.allSatisfy { $0 == 1 }, "fetched more than once: \(counts.filter { $0.value > 1 })")
            // Where each URL went, from the instances' access logs (written within 50 ms): both
            // requests for a URL to one instance, and the ring spread the URLs over all three.
            let originPrefix = "http://127.0.0.1:\(origin.port)"
            func logged(_ instance: Int) -> [String] {
                cluster.targetsLogged(byInstance: instance).filter { $0.hasPrefix(originPrefix + "/objects/") }
            }
            try await eventually("every request in an access log") {
                (1...3).map { logged($0).count }.reduce(0, +) >= 2 * Self.urlCount
            }
            let served = (1...3).map { Set(logged($0)) }
            #expect(served.map(\.count).reduce(0, +) == Self.urlCount, "URLs per instance: \(served.map(\.count))")
            #expect(served.allSatisfy { !$0.isEmpty }, "URLs per instance: \(served.map(\.count))")

            try await cluster.killOne(2)
            for path in paths {
                let response = try await cluster.get(origin.url(path).absoluteString)
                #expect(response.status == 200 && response.bodyText == "object \(path)", "\(path): \(response.status)")
            }
            let after = countsByPath()
            let fetchedAgain = Set(after.filter { $0.value == 2 }.keys)
            #expect(after.values.allSatisfy { $0 <= 2 })
            // Consistent hashing: the URLs that moved are exactly those of the stopped instance
            // (its access log, written out when it stopped); the others stayed where they were cached.
            let ofInstance2 = Set(served[1].map { String($0.dropFirst(originPrefix.count)) })
            #expect(
                fetchedAgain == ofInstance2,
                "fetched again: \(fetchedAgain.sorted()); instance 2 had: \(ofInstance2.sorted())"
            )
            // About a third: at least one, at most two thirds.
            #expect(
                (1...(Self.urlCount * 2 / 3)).contains(fetchedAgain.count),
                "\(fetchedAgain.count) of \(Self.urlCount) fetched again"
            )
        }
    }

    @Test(
        "a cache tier: two dev proxies chained to the front with upstream-proxy; the second dev proxy's request is a hit in the tier, and the origin sees one request"
    )
    func devProxiesChainedToTheTier() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, headers: ["Cache-Control": "max-age=600"], body: "object \(request.target)")
        }
        defer { origin.stop() }
        let url = origin.url("/tier/object?v=1").absoluteString
        try await withCluster { cluster in
            var tierStatuses: [String] = []
            for developer in ["dev1", "dev2"] {
                let directory = try temporaryDirectory()
                defer { try? FileManager.default.removeItem(at: directory) }
                let configuration = directory.appendingPathComponent("dev.yaml")
                try """
                listen:
                  - address: "127.0.0.1:0"
                    mode: forward
                cache:
                  path: "\(directory.appendingPathComponent("cache").path)"
                  kind: private
                sessions:
                  default:
                    upstream-proxy: "http://127.0.0.1:\(cluster.frontPort)"
                hosts:
                  - match: "**"
                    session: default
                """.write(to: configuration, atomically: true, encoding: .utf8)
                let served = try await Served.start(["--config", configuration.path], directory: directory, lines: 1)
                defer { served.child.kill() }
                let host = "127.0.0.1:\(origin.port)"
                let response = try await request(
                    "GET \(url) HTTP/1.1\r\nHost: \(host)\r\n\r\n",
                    port: try served.port("forward")
                )
                #expect(
                    response.status == 200 && response.bodyText == "object /tier/object?v=1",
                    "\(developer): \(response.status)"
                )
                // Cache-Status lists each cache on the way, the one nearest the origin first.
                let cacheStatus = response.headers("Cache-Status").joined(separator: ", ")
                tierStatuses.append(cacheStatus)
                served.child.terminate()
                #expect(try await served.child.waitForExit() == 0)
            }
            #expect(origin.requestCount == 1, "the origin saw \(origin.requestCount) requests")
            #expect(tierStatuses.count == 2)
            #expect(tierStatuses.first?.contains("hit") == false, "\(tierStatuses)")
            // dev2 missed its own cache, and the tier answered from its cache.
            #expect(tierStatuses.last?.contains("hit") == true, "\(tierStatuses)")
        }
    }

    @Test("try-local.sh stop ends every process start began and removes what it made")
    func stopCleansUp() async throws {
        var processes: [Int32] = []
        var directory: URL?
        try await withCluster { cluster in
            processes = try cluster.processIdentifiers()
            directory = cluster.directory
            #expect(processes.count == 4)
            #expect(processes.allSatisfy(isRunning))
        }
        #expect(!processes.isEmpty)
        #expect(processes.allSatisfy { !isRunning($0) }, "still running: \(processes.filter(isRunning))")
        if let directory {
            #expect(!FileManager.default.fileExists(atPath: directory.path))
        }
    }

    /// Starts a cluster in a new temporary directory, runs `body`, and stops it whatever happens.
    private func withCluster(_ body: (LocalCluster) async throws -> Void) async throws {
        let parent = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: parent) }
        let directory = parent.appendingPathComponent("cluster")
        let cluster: LocalCluster
        do {
            cluster = try await LocalCluster.start(in: directory)
        } catch {
            await LocalCluster.stop(directory)
            throw error
        }
        do {
            try await body(cluster)
        } catch {
            await LocalCluster.stop(directory)
            throw error
        }
        let stopped = await LocalCluster.stop(directory)
        #expect(stopped.status == 0, "try-local.sh stop: \(stopped.stderr)")
    }
}

/// Whether a process runs (exists and is not a zombie waiting to be reaped).
private func isRunning(_ pid: Int32) -> Bool {
    guard kill(pid, 0) == 0 else { return false }
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let close = stat.lastIndex(of: ")")
    else { return false }
    let state = stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).first
    return state != "Z" && state != "X"
}

/// A cluster started by deploy/cluster/try-local.sh.
struct LocalCluster {
    let directory: URL
    let frontPort: Int

    static var script: String { packageRoot.appendingPathComponent("deploy/cluster/try-local.sh").path }

    static func environment() throws -> [String: String] {
        let tollgate = try #require(tollgateBinary)
        let haproxy = try #require(haproxyBinary)
        return ["TOLLGATE": tollgate, "HAPROXY": haproxy, "WAIT_SECONDS": "20"]
    }

    /// `try-local.sh start DIR`; its `front 127.0.0.1:PORT` line.
    static func start(in directory: URL) async throws -> LocalCluster {
        let child = try ChildProcess("/bin/bash", [script, "start", directory.path], environment: try environment())
        defer { child.kill() }
        let status: Int32
        do {
            status = try await child.waitForExit(timeout: .seconds(60))
        } catch {
            Issue.record("try-local.sh start did not finish: \(child.standardOutput) \(child.standardError)")
            throw error
        }
        #expect(status == 0, "try-local.sh start: \(child.standardError)")
        let match = try #require(
            child.standardOutput.firstMatch(of: #/^front 127\.0\.0\.1:(\d+)$/#.anchorsMatchLineEndings()),
            "no front line in: \(child.standardOutput) \(child.standardError)"
        )
        return LocalCluster(directory: directory, frontPort: try #require(Int(match.1)))
    }

    /// `try-local.sh stop DIR`.
    @discardableResult
    static func stop(_ directory: URL) async -> (status: Int32, stderr: String) {
        guard let environment = try? environment(),
            let child = try? ChildProcess("/bin/bash", [script, "stop", directory.path], environment: environment)
        else { return (-1, "could not run try-local.sh stop") }
        defer { child.kill() }
        let status = (try? await child.waitForExit(timeout: .seconds(60))) ?? -1
        return (status, child.standardError)
    }

    /// `try-local.sh kill-one DIR N` (returns once HAProxy has marked it down).
    func killOne(_ instance: Int) async throws {
        let result = try await ChildProcess.run(
            "/bin/bash",
            [Self.script, "kill-one", directory.path, String(instance)],
            environment: try Self.environment()
        )
        #expect(result.status == 0, "try-local.sh kill-one: \(result.stderr)")
        #expect(result.stdout.contains("stopped tollgate\(instance)"))
    }

    /// `GET url` in absolute form through the front, on a new connection. (Host is the URL's
    /// authority, port included: HAProxy answers 400 to a Host that differs from it.)
    func get(_ url: String) async throws -> RawResponse {
        let parsed = try #require(URL(string: url))
        let host = try #require(parsed.host)
        let authority = parsed.port.map { "\(host):\($0)" } ?? host
        return try await request("GET \(url) HTTP/1.1\r\nHost: \(authority)\r\n\r\n", port: frontPort)
    }

    /// The targets instance N logged (its JSON access log).
    func targetsLogged(byInstance instance: Int) -> [String] {
        let log = directory.appendingPathComponent("t\(instance)/access.log")
        guard let text = try? String(contentsOf: log, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            return object?["target"] as? String
        }
    }

    /// HAProxy's and the three instances' process identifiers.
    func processIdentifiers() throws -> [Int32] {
        let files = ["haproxy.pid", "t1/pid", "t2/pid", "t3/pid"]
        return try files.map { file in
            let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
            return try #require(Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)), "\(file): \(text)")
        }
    }
}
