import Foundation
import Testing

/// `tollgate explain URL [--config FILE]`, run as the built executable.
@Suite(
    "tollgate explain (the built executable)",
    .enabled(if: CommandLineRunner.binary != nil, Comment(rawValue: CommandLineRunner.notFound)),
    .timeLimit(.minutes(1))
)
struct ExplainCommandTests {
    @Test func aPackageRegistryURLUnderConfDevYAML() async throws {
        let result = try await CommandLineRunner.run(
            [
                "explain", "https://registry.npmjs.org/react/-/react-18.2.0.tgz", "--config",
                ConfFilesTests.path("dev.yaml"),
            ]
        )
        #expect(result.status == 0, "\(result)")
        #expect(
            result.stdout == """
                url: https://registry.npmjs.org/react/-/react-18.2.0.tgz
                rule: hosts[0] "registry.npmjs.org", line 51
                session: packages (configuration default, cache-policy return-cache-else-load, cookies passthrough)
                deny: no
                cache: store allow, force-ttl 30d
                cache-key: the full URL
                trust: roots system, no pins
                client-identity: none
                redirects: pass
                upstream-proxy: none (direct)
                headers: none added
                credentials: none
                intercept: yes

                """
        )
        #expect(result.stderr == "")
    }

    @Test func aLocalDevServerUnderConfDevYAMLIsNeverStored() async throws {
        // The rule's roots name a file under ~ that need not exist: explain does not open it.
        let result = try await CommandLineRunner.run(
            ["explain", "http://localhost:8080/app", "--config", ConfFilesTests.path("dev.yaml")],
            environment: ["HOME": "/nonexistent-home"]
        )
        #expect(result.status == 0, "\(result)")
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.contains("rule: hosts[2] \"localhost\", line 67"))
        #expect(lines.contains("cache: store deny (nothing from this host is stored)"))
        #expect(lines.contains("session: default (configuration default, cache-policy protocol, cookies passthrough)"))
    }

    @Test func withoutConfigTheEmbeddedDefaultDecides() async throws {
        let result = try await CommandLineRunner.run(["explain", "http://example.com/"])
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.hasPrefix("url: http://example.com/\nrule: hosts[0] \"**\""), "\(result)")
        #expect(result.stdout.contains("\nsession: default "))
    }

    @Test(arguments: [
        ("notaurl", "tollgate: notaurl: not an absolute URL; give an absolute URL such as https://example.com/path\n"),
        ("ftp://example.com/", "tollgate: ftp://example.com/: only http and https URLs can be explained\n"),
    ])
    func aBadURLExits1WithAMessage(url: String, message: String) async throws {
        let result = try await CommandLineRunner.run(["explain", url])
        #expect(result.status == 1)
        #expect(result.stdout == "")
        #expect(result.stderr == message)
    }

    @Test func aConfigWithProblemsExits1AndPrintsThem() async throws {
        let directory = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "hosts:\n  - match: \"\"\n".write(toFile: directory + "/bad.yaml", atomically: true, encoding: .utf8)
        let result = try await CommandLineRunner.run(["explain", "http://a.test/", "--config", "bad.yaml"], in: directory)
        #expect(result.status == 1)
        #expect(result.stdout == "")
        #expect(result.stderr.hasPrefix("bad.yaml:2: hosts[0].match"), "\(result)")
    }
}
