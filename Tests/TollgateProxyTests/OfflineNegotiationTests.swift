import Foundation
import Testing
import TollgateCache
import TollgateHTTP
import TollgateTesting

/// Offline, a request whose Accept-Encoding differs from the warm's gets the stored variant when
/// it accepts that representation (identity, here), with and without a manifest; a request that
/// excludes it is a miss.
@Suite(
    "Offline content negotiation: the warm's identity variant for a request accepting gzip (the built executable)",
    .serialized,
    .timeLimit(.minutes(2)),
    .enabled(if: tollgateBinary != nil)
)
struct OfflineNegotiationTests {
    @Test("Served offline to Accept-Encoding: gzip, by the cache and by the manifest; identity;q=0 is a miss")
    func identityForGzip() async throws {
        let binary = try #require(tollgateBinary)
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try await LoopbackOrigin.start { request, respond in
            respond.send(
                status: 200, headers: ["Cache-Control": "max-age=600", "Vary": "Accept-Encoding", "Content-Type": "application/octet-stream"],
                body: "artifact \(request.path)"
            )
        }
        defer { origin.stop() }
        let base = "http://127.0.0.1:\(origin.port)"
        let config = directory.appendingPathComponent("tollgate.yaml")
        try """
            listen:
              - address: "127.0.0.1:0"
            cache:
              path: "\(directory.appendingPathComponent("cache").path)"
            """.write(to: config, atomically: true, encoding: .utf8)
        let list = directory.appendingPathComponent("urls.txt")
        try "\(base)/lib.tgz\n".write(to: list, atomically: true, encoding: .utf8)
        let manifest = directory.appendingPathComponent("manifest.json")
        let environment = ["XDG_DATA_HOME": directory.appendingPathComponent("data").path]
        let warmed = try await ChildProcess.run(
            binary, ["warm", "--config", config.path, "--manifest", manifest.path, list.path], environment: environment
        )
        #expect(warmed.status == 0, "\(warmed.stdout) \(warmed.stderr)")
        let entries = try CacheManifest.load(contentsOf: manifest.path).entries
        #expect(entries.count == 1 && entries[0].vary.keys.sorted() == ["accept-encoding"] && entries[0].vary["accept-encoding"] == .some(nil), "\(entries)")
        origin.stop()

        for arguments in [["--offline"], ["--offline", "--manifest", manifest.path]] {
            let served = try await Served.start(["--config", config.path] + arguments, directory: directory, lines: 1, environment: environment)
            defer { served.child.kill() }
            let port = try served.port("forward")
            let gzip = try await request(
                "GET \(base)/lib.tgz HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip, deflate\r\n\r\n", port: port
            )
            #expect(gzip.status == 200, "\(arguments): \(gzip.bodyText)")
            #expect(gzip.bodyText == "artifact /lib.tgz")
            #expect(gzip.header("Content-Encoding") == nil)
            let same = try await request("GET \(base)/lib.tgz HTTP/1.1\r\nHost: x\r\n\r\n", port: port)
            #expect(same.status == 200)
            #expect(same.header("Cache-Status") == "tollgate; hit; detail=\"offline\"")
            let refused = try await request(
                "GET \(base)/lib.tgz HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip, identity;q=0\r\n\r\n", port: port
            )
            #expect(refused.status == 504, "\(arguments)")
            #expect(refused.header("Tollgate-Error") == "offline-miss")
            // Chosen by what the request accepts: said in Cache-Status.
            #expect(gzip.header("Cache-Status") == "tollgate; hit; detail=\"offline,negotiated\"", "\(arguments): \(gzip.header("Cache-Status") ?? "none")")
            if arguments.count > 1 { #expect(refused.bodyText.contains("not in the manifest"), "\(refused.bodyText)") }
        }
    }
}
