import Foundation
import NIOCore
import Testing
import TollgateCache
import TollgateHTTP
import TollgateTLS
import TollgateTesting

@Suite(
    "tollgate cache, trust pin and ca",
    .enabled(if: CommandLineRunner.binary != nil, Comment(rawValue: CommandLineRunner.notFound)),
    .timeLimit(.minutes(1))
)
struct CacheTrustCACommandTests {
    static func temporaryDirectory() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-cli-\(UUID().uuidString)").path
    }

    @Test("ca init creates a CA with a 0600 key, refuses to replace it, and ca export prints it")
    func caInitExport() async throws {
        let directory = Self.temporaryDirectory() + "/ca"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let created = try await CommandLineRunner.run(["ca", "init", "--dir", directory])
        #expect(created.status == 0, "\(created)")
        let mode = try FileManager.default.attributesOfItem(atPath: directory + "/ca.key")[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let again = try await CommandLineRunner.run(["ca", "init", "--dir", directory])
        #expect(again.status == 1)
        #expect(again.stderr.contains("already exists"))
        let exported = try await CommandLineRunner.run(["ca", "export", "--dir", directory])
        #expect(exported.status == 0)
        let certificate = try Certificate(pem: exported.stdout)
        #expect(certificate.isCA)
        #expect(certificate.notAfter.timeIntervalSinceNow > 700 * 86_400)
        let missing = try await CommandLineRunner.run(["ca", "export", "--dir", directory + "-none"])
        #expect(missing.status == 1)
    }

    @Test("trust pin prints the presented chain's pins, and says why an untrusted chain is untrusted")
    func trustPin() async throws {
        let pki = try TestPKI()
        let origin = try await LoopbackOrigin.start(tls: pki.serverConfiguration) { _, respond in respond.send(status: 200) }
        defer { origin.stop() }
        let result = try await CommandLineRunner.run(["trust", "pin", "127.0.0.1:\(origin.port)"])
        #expect(result.status == 0, "\(result)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "\(pki.server.certificate.spkiPin)  \(pki.server.certificate.subject)")
        #expect(result.stderr.contains("not trusted"))
        let trusted = try await CommandLineRunner.run(["trust", "pin", "127.0.0.1:\(origin.port)", "--ca-file", pki.caFile])
        #expect(trusted.stderr.contains("trusted: the chain verifies"))
        let closed = ClosedPort()
        let refused = try await CommandLineRunner.run(["trust", "pin", "127.0.0.1:\(closed.port)"])
        #expect(refused.status == 1)
        #expect(try await CommandLineRunner.run(["trust", "pin", "host:notaport"]).status == 1)
    }

    @Test("trust pin --connect-to asks a backend for a name's chain: the name is sent and checked, the address dialled")
    func trustPinConnectTo() async throws {
        let pki = try TestPKI(host: "api.test")
        let origin = try await LoopbackOrigin.start(tls: pki.serverConfiguration) { _, respond in respond.send(status: 200) }
        defer { origin.stop() }
        let result = try await CommandLineRunner.run(
            ["trust", "pin", "api.test", "--connect-to", "127.0.0.1:\(origin.port)", "--ca-file", pki.caFile]
        )
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.hasPrefix("\(pki.server.certificate.spkiPin)  "))
        #expect(result.stderr.contains("trusted: the chain verifies for api.test"), "\(result.stderr)")
        // Checked for the name given, not the address: another name does not verify.
        let other = try await CommandLineRunner.run(
            ["trust", "pin", "other.test", "--connect-to", "127.0.0.1:\(origin.port)", "--ca-file", pki.caFile]
        )
        #expect(other.stderr.contains("not trusted"), "\(other.stderr)")
    }

    @Test("cache stats, list, purge and verify work on a stored entry; verify finds a corrupted body")
    func cacheCommands() async throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let url = HTTPURL(string: "http://example.test/big")!
        do {
            let store = try CacheStore(options: CacheStoreOptions(path: directory, maxSize: 64 << 20))
            let body = ByteBuffer(bytes: [UInt8](repeating: 7, count: 200_000))
            try store.store(
                key: CacheKey(url: url), request: HTTPRequestHead(url: url),
                response: HTTPResponseHead(status: 200, headerFields: ["Cache-Control": "max-age=60"]),
                body: body, requestTime: Date(), responseTime: Date()
            )
            store.close()
        }
        let stats = try await CommandLineRunner.run(["cache", "stats", "--cache-dir", directory])
        #expect(stats.status == 0, "\(stats)")
        #expect(stats.stdout.contains("entries: 1"))
        let list = try await CommandLineRunner.run(["cache", "list", "--cache-dir", directory])
        #expect(list.stdout.contains("200  200000"))
        #expect(list.stdout.contains(url.absoluteString))
        #expect(try await CommandLineRunner.run(["cache", "verify", "--cache-dir", directory]).status == 0)
        // Corrupt the body file: verify must notice.
        let bodies = try FileManager.default.subpathsOfDirectory(atPath: directory).filter { $0.hasPrefix("bodies/") && !$0.hasSuffix("bodies/") }
        let file = try #require(bodies.first { !$0.contains("tmp") && FileManager.default.fileExists(atPath: directory + "/" + $0) && !$0.hasSuffix("/") })
        let handle = try #require(FileHandle(forWritingAtPath: directory + "/" + file))
        try handle.seek(toOffset: 10)
        handle.write(Data([1, 2, 3]))
        try handle.close()
        let verify = try await CommandLineRunner.run(["cache", "verify", "--cache-dir", directory])
        #expect(verify.status == 1)
        #expect(verify.stdout.contains("bad 1"))
        let purge = try await CommandLineRunner.run(["cache", "purge", url.absoluteString, "--cache-dir", directory])
        #expect(purge.stdout.contains("purged 1"))
        #expect(try await CommandLineRunner.run(["cache", "stats", "--cache-dir", directory]).stdout.contains("entries: 0"))
    }
}
