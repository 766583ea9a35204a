import Foundation
import Testing

/// `tollgate check-config FILE`, run as the built executable.
@Suite(
    "tollgate check-config (the built executable)",
    .enabled(if: CommandLineRunner.binary != nil, Comment(rawValue: CommandLineRunner.notFound)),
    .timeLimit(.minutes(1))
)
struct CheckConfigCommandTests {
    static let broken = """
        listen:
          - address: "127.0.0.1:99999"
            mode: forwrd
        cache:
          max-size: 10 parsecs
        sessions:
          default:
            redirects: sometimes
        hosts:
          - match: "*.example.com"
            session: nope
            cache: { force-ttl: soon }
        limits:
          header-read-timeot: 10s

        """

    /// A temporary directory holding `files` (name → text).
    static func directory(with files: [String: String]) throws -> String {
        let directory = try Fixture.temporaryDirectory()
        for (name, text) in files {
            try text.write(toFile: directory + "/" + name, atomically: true, encoding: .utf8)
        }
        return directory
    }

    @Test func aBrokenFileGetsOneLinePerProblemAndExit1() async throws {
        let directory = try Self.directory(with: ["broken.yaml": Self.broken])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try await CommandLineRunner.run(["check-config", "broken.yaml"], in: directory)
        #expect(result.status == 1, "\(result)")
        #expect(
            result.stdout == """
                broken.yaml:2: listen[0].address: bad address "127.0.0.1:99999": the port must be a number from 0 to 65535
                broken.yaml:3: listen[0].mode: unknown value "forwrd"; expected forward or reverse; did you mean "forward"?
                broken.yaml:5: cache.max-size: bad size "10 parsecs"; expected bytes or a number with KiB, MiB, GiB or TiB
                broken.yaml:8: sessions.default.redirects: unknown value "sometimes"; expected one of pass, follow, follow-same-host
                broken.yaml:11: hosts[0].session: unknown session "nope"; sessions are: default
                broken.yaml:12: hosts[0].cache.force-ttl: bad duration "soon"; expected a whole number and a unit: 500ms, 30s, 10m, 2h or 7d
                broken.yaml:14: limits.header-read-timeot: unknown key "header-read-timeot"; did you mean "header-read-timeout"?

                """
        )
        #expect(result.stderr == "")
    }

    @Test func aYAMLSyntaxErrorIsOneProblemLine() async throws {
        let directory = try Self.directory(with: ["syntax.yaml": "a: [1, 2\nb: 3\n"])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try await CommandLineRunner.run(["check-config", "syntax.yaml"], in: directory)
        #expect(result.status == 1)
        #expect(
            result.stdout
                == "syntax.yaml:2: (yaml): did not find expected ',' or ']' (while parsing a flow sequence at line 1)\n"
        )
        #expect(result.stderr == "")
    }

    @Test func anUnreadableFileIsAProblemLineNotACrash() async throws {
        let directory = try Self.directory(with: [:])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let missing = try await CommandLineRunner.run(["check-config", "missing.yaml"], in: directory)
        #expect(missing.status == 1)
        #expect(missing.stdout == "missing.yaml:1: (file): cannot read the file: no such file\n")
        #expect(missing.stderr == "")

        let aDirectory = try await CommandLineRunner.run(["check-config", directory])
        #expect(aDirectory.status == 1)
        #expect(aDirectory.stdout == "\(directory):1: (file): cannot read the file: is a directory\n")

        let binary = try await CommandLineRunner.run(["check-config", try #require(CommandLineRunner.binary)])
        #expect(binary.status == 1)
        #expect(binary.stdout.split(separator: "\n").count == 1, "\(binary)")
        #expect(binary.stdout.contains(":1: (file): "), "\(binary)")
    }

    @Test(arguments: 0..<ConfFilesTests.files.count)
    func everyShippedFileIsOKWithItsReferencedFilesInPlace(index: Int) async throws {
        let (name, referenced) = ConfFilesTests.files[index]
        let directory = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let home = directory + "/home"
        try FileManager.default.createDirectory(atPath: directory + "/etc", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: ConfFilesTests.path(name), toPath: directory + "/etc/" + name)
        for file in referenced {
            let target = file.hasPrefix("~/") ? home + file.dropFirst(1) : directory + "/etc/" + file
            try FileManager.default.createDirectory(
                atPath: (target as NSString).deletingLastPathComponent,
                withIntermediateDirectories: true
            )
            #expect(FileManager.default.createFile(atPath: target, contents: Data("placeholder\n".utf8)))
        }
        let result = try await CommandLineRunner.run(
            ["check-config", "etc/" + name],
            in: directory,
            environment: ["HOME": home]
        )
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout == "ok\n")
        #expect(result.stderr == "")
    }

    @Test func theShippedDefaultIsOKAsItIs() async throws {
        let result = try await CommandLineRunner.run(["check-config", ConfFilesTests.path("default.yaml")])
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout == "ok\n")
    }

    @Test func withoutAFileItIsAUsageErrorWithExit1() async throws {
        let result = try await CommandLineRunner.run(["check-config"])
        #expect(result.status == 1)
        #expect(result.stdout == "")
        #expect(result.stderr.contains("Usage: tollgate check-config <file>"))
    }
}
