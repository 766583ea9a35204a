import Foundation
import Testing
import TollgateTesting

/// systemd's analyzer, where systemd is installed.
let systemdAnalyze: String? = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"]
    .first { FileManager.default.isExecutableFile(atPath: $0) }

/// The files under deploy/ that no engine runs here: the systemd unit (checked by
/// systemd-analyze, offline), the container file (its structure), and the configurations they
/// install (checked by `tollgate check-config`).
@Suite("deploy/: the systemd unit, the container file and their configurations", .timeLimit(.minutes(1)))
struct DeploymentFilesTests {
    static var unit: URL { packageRoot.appendingPathComponent("deploy/systemd/tollgate.service") }

    @Test(
        "systemd-analyze security --offline=yes rates the unit's exposure at 2.0 or below",
        .enabled(if: systemdAnalyze != nil, "systemd-analyze is not installed")
    )
    func unitExposureIsAtMostTwo() async throws {
        // Its table goes to a file, read once the analyzer has exited: read from a pipe while the
        // suite ran, it was twice cut short before its last line (`make test`, `make test-tsan`).
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("systemd-analyze-\(UUID().uuidString).txt")
        defer { try? FileManager.default.removeItem(at: file) }
        let command = "exec \"$0\" security --offline=yes --no-pager \"$1\" > \"$2\" 2>&1"
        let result = try await ChildProcess.run("/bin/sh", ["-c", command, try #require(systemdAnalyze), Self.unit.path, file.path])
        #expect(result.status == 0, "\(result.stderr)")
        let output = try String(contentsOf: file, encoding: .utf8)
        let match = try #require(
            output.firstMatch(of: #/Overall exposure level for tollgate\.service: (\d+\.\d+)/#),
            "no exposure level in: \(output)"
        )
        let exposure = try #require(Double(match.1))
        #expect(exposure <= 2.0, "exposure \(exposure)")
        // The settings the unit is meant to have are the ones the analyzer saw.
        for setting in [
            "User=/DynamicUser=", "ProtectSystem=", "NoNewPrivileges=", "RestrictAddressFamilies=~AF_PACKET",
        ] {
            #expect(output.contains("✓ \(setting)"), "\(setting) is not rated as set: \(output)")
        }
    }

    @Test(
        "systemd-analyze verify accepts the unit (its ExecStart pointed at the built tollgate)",
        .enabled(
            if: systemdAnalyze != nil && tollgateBinary != nil,
            "systemd-analyze or the tollgate executable is missing"
        )
    )
    func unitVerifies() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let text = try String(contentsOf: Self.unit, encoding: .utf8)
        #expect(text.contains("ExecStart=/usr/local/bin/tollgate serve --config %E/tollgate/tollgate.yaml"))
        // verify checks that ExecStart's program exists; `make install` puts it at /usr/local/bin.
        let copy = directory.appendingPathComponent("tollgate.service")
        try text.replacingOccurrences(of: "/usr/local/bin/tollgate", with: try #require(tollgateBinary))
            .write(to: copy, atomically: true, encoding: .utf8)
        let result = try await ChildProcess.run(try #require(systemdAnalyze), ["verify", "--man=no", copy.path])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stderr.isEmpty && result.stdout.isEmpty, "\(result.stdout)\(result.stderr)")
    }

    @Test(
        "systemd-analyze verify accepts the socket unit beside the service, and it listens where the installed configuration's listener and admin API are",
        .enabled(
            if: systemdAnalyze != nil && tollgateBinary != nil,
            "systemd-analyze or the tollgate executable is missing"
        )
    )
    func socketUnitVerifies() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let service = try String(contentsOf: Self.unit, encoding: .utf8)
        try service.replacingOccurrences(of: "/usr/local/bin/tollgate", with: try #require(tollgateBinary))
            .write(to: directory.appendingPathComponent("tollgate.service"), atomically: true, encoding: .utf8)
        let socketUnit = packageRoot.appendingPathComponent("deploy/systemd/tollgate.socket")
        let socket = directory.appendingPathComponent("tollgate.socket")
        try FileManager.default.copyItem(at: socketUnit, to: socket)
        let result = try await ChildProcess.run(try #require(systemdAnalyze), ["verify", "--man=no", socket.path])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stderr.isEmpty && result.stdout.isEmpty, "\(result.stdout)\(result.stderr)")
        // Every socket it opens is one a listener of the installed configuration serves.
        let listens = try String(contentsOf: socketUnit, encoding: .utf8).split(separator: "\n")
            .filter { $0.hasPrefix("ListenStream=") }.map { String($0.dropFirst("ListenStream=".count)) }
        let configuration = try String(contentsOf: packageRoot.appendingPathComponent("deploy/systemd/tollgate.yaml"), encoding: .utf8)
        #expect(listens == ["127.0.0.1:3128", "127.0.0.1:9090"])
        for address in listens { #expect(configuration.contains("address: \"\(address)\""), "\(address)") }
    }

    @Test(
        "the unit is Type=notify, reloads with SIGHUP, restarts on failure, and keeps its paths in systemd's directories"
    )
    func unitSettings() throws {
        let lines = Set(try String(contentsOf: Self.unit, encoding: .utf8).split(separator: "\n").map(String.init))
        for line in [
            "Type=notify", "ExecReload=/bin/kill -HUP $MAINPID", "Restart=on-failure", "CacheDirectory=tollgate",
            "StateDirectory=tollgate", "ConfigurationDirectory=tollgate", "CapabilityBoundingSet=",
            "SystemCallFilter=@system-service", "DynamicUser=yes",
        ] {
            #expect(lines.contains(line), "missing: \(line)")
        }
        #expect(
            lines.contains {
                $0.hasPrefix("Environment=") && $0.contains("XDG_CACHE_HOME=%C") && $0.contains("XDG_DATA_HOME=%S")
            }
        )
    }

    @Test(
        "the configurations deploy/ installs pass check-config, and keep the cache where the unit and the image give it room",
        .enabled(
            if: tollgateBinary != nil,
            "the tollgate executable was not found next to the tests or in .build/debug"
        )
    )
    func installedConfigurationsAreValid() async throws {
        for (file, cachePath) in [
            ("deploy/systemd/tollgate.yaml", "/var/cache/tollgate"),
            ("deploy/container/tollgate.yaml", "/var/cache/tollgate"),
        ] {
            let path = packageRoot.appendingPathComponent(file).path
            let result = try await ChildProcess.run(try #require(tollgateBinary), ["check-config", path])
            #expect(result.status == 0 && result.stdout == "ok\n", "\(file): \(result.stdout)\(result.stderr)")
            #expect(try String(contentsOfFile: path, encoding: .utf8).contains("path: \"\(cachePath)\""), "\(file)")
        }
    }

    @Test(
        "make install puts the binary, the unit (paths rewritten for PREFIX) and the configuration under DESTDIR, and keeps an existing configuration",
        .enabled(
            if: tollgateBinary != nil && FileManager.default.isExecutableFile(atPath: "/usr/bin/make"),
            "make or the tollgate executable is missing"
        )
    )
    func makeInstall() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let stage = directory.appendingPathComponent("stage").path
        let arguments = [
            "-C", packageRoot.path, "--no-print-directory", "install", "DESTDIR=\(stage)", "PREFIX=/opt/tollgate",
            "RELEASE_BINARY=\(try #require(tollgateBinary))",
        ]
        let first = try await ChildProcess.run("/usr/bin/make", arguments)
        #expect(first.status == 0, "\(first.stdout)\(first.stderr)")
        let manager = FileManager.default
        #expect(manager.isExecutableFile(atPath: stage + "/opt/tollgate/bin/tollgate"))
        let unit = try String(
            contentsOfFile: stage + "/opt/tollgate/lib/systemd/system/tollgate.service",
            encoding: .utf8
        )
        #expect(unit.contains("ExecStart=/opt/tollgate/bin/tollgate serve --config %E/tollgate/tollgate.yaml"))
        #expect(!unit.contains("/usr/local/"))
        let socketUnit = try String(contentsOfFile: stage + "/opt/tollgate/lib/systemd/system/tollgate.socket", encoding: .utf8)
        #expect(socketUnit.contains("ListenStream=127.0.0.1:3128") && !socketUnit.contains("/usr/local/"))
        // Shell completions, generated by the installed binary's argument parser.
        let bash = try String(contentsOfFile: stage + "/opt/tollgate/share/bash-completion/completions/tollgate", encoding: .utf8)
        #expect(bash.contains("_tollgate") && bash.contains("check-config") && bash.contains("--offline"))
        #expect(manager.fileExists(atPath: stage + "/opt/tollgate/share/zsh/site-functions/_tollgate"))
        #expect(manager.fileExists(atPath: stage + "/opt/tollgate/share/fish/vendor_completions.d/tollgate.fish"))
        let configuration = stage + "/etc/tollgate/tollgate.yaml"
        #expect(
            try String(contentsOfFile: configuration, encoding: .utf8)
                == String(
                    contentsOf: packageRoot.appendingPathComponent("deploy/systemd/tollgate.yaml"),
                    encoding: .utf8
                )
        )
        // A second install leaves the operator's file alone.
        try "# edited\n".write(toFile: configuration, atomically: true, encoding: .utf8)
        let second = try await ChildProcess.run("/usr/bin/make", arguments)
        #expect(second.status == 0, "\(second.stdout)\(second.stderr)")
        #expect(try String(contentsOfFile: configuration, encoding: .utf8) == "# edited\n")
        #expect(manager.fileExists(atPath: configuration + ".default"))
    }

    @Test(
        "the Containerfile builds in the Swift image and runs on slim Debian 12 with libssl3 and liblmdb0, as a non-root user, the cache a volume, a health check on /healthz"
    )
    func containerfileStructure() throws {
        let text = try String(
            contentsOf: packageRoot.appendingPathComponent("deploy/container/Containerfile"),
            encoding: .utf8
        )
        // Continuation lines joined, comments dropped: one instruction a line.
        let instructions = text.replacingOccurrences(of: "\\\n", with: " ")
            .split(separator: "\n")
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        let froms = instructions.filter { $0.hasPrefix("FROM ") }
        #expect(froms.count == 2, "\(froms)")
        #expect(froms.first?.hasSuffix(" AS build") == true)
        #expect(text.contains("ARG SWIFT_IMAGE=docker.io/library/swift:") && text.contains("-bookworm"))
        #expect(text.contains("ARG RUNTIME_IMAGE=docker.io/library/debian:bookworm-slim"))
        let runtime = instructions.drop { $0 != froms.last }
        #expect(runtime.contains { $0.hasPrefix("RUN ") && $0.contains("libssl3") && $0.contains("liblmdb0") })
        #expect(runtime.contains { $0.hasPrefix("COPY --from=build ") })
        let user = try #require(runtime.last { $0.hasPrefix("USER ") })
        #expect(!user.contains("root") && user != "USER 0", "\(user)")
        let volume = try #require(runtime.first { $0.hasPrefix("VOLUME ") })
        #expect(volume.contains("/var/cache/tollgate"))
        let healthcheck = try #require(runtime.first { $0.hasPrefix("HEALTHCHECK ") })
        #expect(healthcheck.contains("/healthz") && healthcheck.contains("/dev/tcp/127.0.0.1/9090"))
        #expect(runtime.contains("COPY deploy/container/tollgate.yaml /etc/tollgate/tollgate.yaml"))
        #expect(runtime.contains { $0.hasPrefix("ENTRYPOINT [\"/usr/local/bin/tollgate\"]") })
        // The health check asks the admin listener the image's configuration has.
        let configuration = try String(
            contentsOf: packageRoot.appendingPathComponent("deploy/container/tollgate.yaml"),
            encoding: .utf8
        )
        #expect(configuration.contains("address: \"127.0.0.1:9090\""))
    }
}
