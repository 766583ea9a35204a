import Foundation
import Testing
import TollgateCache
import TollgateHTTP
import TollgateTesting

/// `tollgate warm LOCKFILE`: the artifacts an npm, Yarn or Cargo lockfile pins, fetched and checked
/// against its digests; what does not match is not left in the cache.
@Suite(
    "tollgate warm of a lockfile: npm, Yarn, Cargo (the built executable)",
    .serialized,
    .timeLimit(.minutes(1)),
    .enabled(if: tollgateBinary != nil)
)
struct WarmLockfileTests {
    /// `sha512-BASE64` of `text`, as npm writes `integrity` (computed by the openssl command).
    private func integrity(_ text: String, _ algorithm: String = "sha512") async throws -> String {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-sri-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        let result = try await ChildProcess.run("/bin/sh", ["-c", "openssl dgst -\(algorithm) -binary '\(file)' | base64 -w0"])
        return "\(algorithm)-\(result.stdout)"
    }

    /// `tollgate warm --config CONFIG LOCKFILE`, its data directory in `directory`.
    private func runWarm(
        _ lockfile: URL, config: URL, in directory: URL, environment: [String: String] = [:]
    ) async throws -> (status: Int32, stdout: String, stderr: String) {
        let binary = try #require(tollgateBinary)
        return try await ChildProcess.run(
            binary, ["warm", "--config", config.path, lockfile.path],
            environment: environment.merging(["XDG_DATA_HOME": directory.appendingPathComponent("data").path]) { $1 }
        )
    }

    /// A configuration with a listener and a cache in `directory`, and no host rules.
    private func plainConfiguration(in directory: URL) throws -> URL {
        let config = directory.appendingPathComponent("tollgate.yaml")
        try "listen:\n  - address: \"127.0.0.1:0\"\ncache:\n  path: \"\(directory.appendingPathComponent("cache").path)\"\n"
            .write(to: config, atomically: true, encoding: .utf8)
        return config
    }

    /// An origin answering every path with `tarball PATH`, fresh for ten minutes.
    private func tarballOrigin() async throws -> LoopbackOrigin {
        try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, headers: ["Cache-Control": "max-age=600"], body: "tarball \(request.path)")
        }
    }

    /// The hex digest of `text` by the openssl command.
    private func hexDigest(_ text: String, _ algorithm: String) async throws -> String {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-hex-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        let result = try await ChildProcess.run("/bin/sh", ["-c", "openssl dgst -\(algorithm) -r '\(file)' | cut -d' ' -f1"])
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test("Every resolved tarball is warmed; one whose bytes are not what the lockfile pins fails and leaves the cache; the offline proxy serves the rest")
    func lockfileWithIntegrity() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try await tarballOrigin()
        defer { origin.stop() }
        let base = "http://127.0.0.1:\(origin.port)"
        let config = directory.appendingPathComponent("tollgate.yaml")
        try """
            listen:
              - address: "127.0.0.1:0"
            cache:
              path: "\(directory.appendingPathComponent("cache").path)"
            """.write(to: config, atomically: true, encoding: .utf8)
        // Version 3: the flat `packages` map. `left-pad` is listed twice (two install paths); the
        // tampered one's integrity is of other bytes; the git dependency has no tarball to fetch.
        let lockfile = directory.appendingPathComponent("package-lock.json")
        try """
            {
              "name": "app", "version": "1.0.0", "lockfileVersion": 3, "requires": true,
              "packages": {
                "": { "name": "app", "version": "1.0.0", "dependencies": { "react": "^18" } },
                "node_modules/react": { "version": "18.3.1", "resolved": "\(base)/react/-/react-18.3.1.tgz",
                  "integrity": "\(try await integrity("tarball /react/-/react-18.3.1.tgz")) sha1-AAAAAAAAAAAAAAAAAAAAAAAAAAA=" },
                "node_modules/left-pad": { "version": "1.3.0", "resolved": "\(base)/left-pad/-/left-pad-1.3.0.tgz",
                  "integrity": "\(try await integrity("tarball /left-pad/-/left-pad-1.3.0.tgz", "sha256"))" },
                "node_modules/x/node_modules/left-pad": { "version": "1.3.0", "resolved": "\(base)/left-pad/-/left-pad-1.3.0.tgz",
                  "integrity": "\(try await integrity("tarball /left-pad/-/left-pad-1.3.0.tgz", "sha256"))" },
                "node_modules/tampered": { "version": "0.0.1", "resolved": "\(base)/tampered/-/tampered-0.0.1.tgz",
                  "integrity": "\(try await integrity("what the author published"))" },
                "node_modules/from-git": { "version": "1.0.0", "resolved": "git+ssh://git@example.invalid/x.git#abc" }
              }
            }
            """.write(to: lockfile, atomically: true, encoding: .utf8)
        let warm = try await runWarm(lockfile, config: config, in: directory)
        #expect(warm.status == 1, "\(warm.stdout) \(warm.stderr)")
        let lines = warm.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains("200  tollgate; fwd=uri-miss; stored  \(base)/react/-/react-18.3.1.tgz"), "\(warm.stdout)")
        #expect(lines.contains("200  tollgate; fwd=uri-miss; stored  \(base)/left-pad/-/left-pad-1.3.0.tgz"))
        let tampered = try #require(lines.first { $0.hasPrefix("failed  \(base)/tampered/-/tampered-0.0.1.tgz: integrity mismatch") }, "\(warm.stdout)")
        #expect(tampered.contains("the lockfile says \(try await integrity("what the author published"))"))
        #expect(tampered.contains("the body is \(try await integrity("tarball /tampered/-/tampered-0.0.1.tgz"))"))
        #expect(tampered.hasSuffix("removed from the cache"))
        #expect(lines.last == "warmed 2 of 3 URLs: 2 stored, 0 already fresh, 0 not stored, 1 failed, 0 resumed", "\(warm.stdout)")
        #expect(origin.requestCount == 3)

        // The cache holds the two that match, not the tampered one.
        let list = try await ChildProcess.run(try #require(tollgateBinary), ["cache", "list", "--config", config.path])
        #expect(list.stdout.contains("\(base)/react/-/react-18.3.1.tgz"), "\(list.stdout)")
        #expect(!list.stdout.contains("tampered"), "\(list.stdout)")

        // A version 1 lockfile (nested dependencies) names the same tarballs: fresh hits now, and
        // checked again.
        let old = directory.appendingPathComponent("npm-shrinkwrap.json")
        try """
            { "name": "app", "lockfileVersion": 1, "dependencies": {
                "react": { "version": "18.3.1", "resolved": "\(base)/react/-/react-18.3.1.tgz",
                  "integrity": "\(try await integrity("tarball /react/-/react-18.3.1.tgz"))",
                  "dependencies": { "left-pad": { "version": "1.3.0", "resolved": "\(base)/left-pad/-/left-pad-1.3.0.tgz",
                    "integrity": "\(try await integrity("tarball /left-pad/-/left-pad-1.3.0.tgz", "sha384"))" } } } } }
            """.write(to: old, atomically: true, encoding: .utf8)
        let again = try await runWarm(old, config: config, in: directory)
        #expect(again.status == 0, "\(again.stdout) \(again.stderr)")
        #expect(again.stdout.contains("warmed 2 of 2 URLs: 0 stored, 2 already fresh"), "\(again.stdout)")
        #expect(origin.requestCount == 3)
    }

    @Test("A Yarn classic lockfile: integrity where given, else the resolved URL's #SHA1; a mismatch fails and leaves the cache")
    func yarnLockfile() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try await tarballOrigin()
        defer { origin.stop() }
        let base = "http://127.0.0.1:\(origin.port)"
        let config = try plainConfiguration(in: directory)
        let lockfile = directory.appendingPathComponent("yarn.lock")
        try """
            # THIS IS AN AUTOGENERATED FILE. DO NOT EDIT THIS FILE DIRECTLY.
            # yarn lockfile v1


            "@scope/a@^1.0.0", "@scope/a@^1.1.0":
              version "1.1.0"
              resolved "\(base)/@scope/a/-/a-1.1.0.tgz#\(try await hexDigest("tarball /@scope/a/-/a-1.1.0.tgz", "sha1"))"
              integrity \(try await integrity("tarball /@scope/a/-/a-1.1.0.tgz"))

            b@2.0.0:
              version "2.0.0"
              resolved "\(base)/b/-/b-2.0.0.tgz#\(try await hexDigest("tarball /b/-/b-2.0.0.tgz", "sha1"))"

            c@3.0.0:
              version "3.0.0"
              resolved "\(base)/c/-/c-3.0.0.tgz#\(try await hexDigest("not these bytes", "sha1"))"
              dependencies:
                b "2.0.0"
            """.write(to: lockfile, atomically: true, encoding: .utf8)
        let warm = try await runWarm(lockfile, config: config, in: directory)
        #expect(warm.status == 1, "\(warm.stdout) \(warm.stderr)")
        #expect(warm.stdout.contains("stored  \(base)/@scope/a/-/a-1.1.0.tgz\n"), "\(warm.stdout)")
        #expect(warm.stdout.contains("stored  \(base)/b/-/b-2.0.0.tgz\n"), "\(warm.stdout)")
        #expect(warm.stdout.contains("failed  \(base)/c/-/c-3.0.0.tgz: integrity mismatch: the lockfile says sha1-"), "\(warm.stdout)")
        #expect(warm.stdout.contains("warmed 2 of 3 URLs"), "\(warm.stdout)")
        #expect(origin.requests.map(\.target).sorted() == ["/@scope/a/-/a-1.1.0.tgz", "/b/-/b-2.0.0.tgz", "/c/-/c-3.0.0.tgz"])
    }

    @Test("composer.lock: each package's dist as Composer downloads it (a preferred mirror first, %package% and %reference% filled in; a redirect followed to its storage), checked by shasum where given; source-only packages left out")
    func composerLock() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try await LoopbackOrigin.start { request, respond in
            if request.path.hasPrefix("/repos/") {
                // GitHub's API answers a zipball URL with a redirect to codeload.
                respond.send(
                    status: 302, headers: ["Location": "/codeload" + request.path.dropFirst("/repos".count), "Cache-Control": "public, max-age=60"], body: ""
                )
            } else {
                respond.send(status: 200, headers: ["Cache-Control": "max-age=600"], body: "zip \(request.path)")
            }
        }
        defer { origin.stop() }
        let base = "http://127.0.0.1:\(origin.port)"
        let config = try plainConfiguration(in: directory)
        let lockfile = directory.appendingPathComponent("composer.lock")
        try """
            {
                "_readme": ["This file locks the dependencies of your project to a known state"],
                "content-hash": "4b1c0b3f0f1e2d3c4b5a69788796a5b4",
                "packages": [
                    {"name": "acme/checked", "version": "1.2.0",
                     "dist": {"type": "zip", "url": "\(base)/dists/acme-checked-1.2.0.zip", "reference": "abc", "shasum": "\(try await hexDigest("zip /dists/acme-checked-1.2.0.zip", "sha1"))"}},
                    {"name": "acme/github", "version": "v2.0.1",
                     "source": {"type": "git", "url": "https://github.com/acme/github.git", "reference": "0123abcd"},
                     "dist": {"type": "zip", "url": "\(base)/repos/acme/github/zipball/0123abcd", "reference": "0123abcd", "shasum": ""}},
                    {"name": "acme/mirrored", "version": "3.0.0",
                     "dist": {"type": "zip", "url": "\(base)/origin/mirrored.zip", "reference": "fedc", "shasum": "",
                              "mirrors": [{"url": "\(base)/mirror/%package%/%reference%.%type%", "preferred": true}]}},
                    {"name": "acme/source-only", "version": "dev-main",
                     "source": {"type": "git", "url": "https://example.invalid/acme/source-only.git", "reference": "9999"}}
                ],
                "packages-dev": [
                    {"name": "acme/tampered", "version": "0.1.0",
                     "dist": {"type": "tar", "url": "\(base)/dists/acme-tampered-0.1.0.tar", "reference": null, "shasum": "\(try await hexDigest("other bytes", "sha1"))"}}
                ],
                "aliases": [], "minimum-stability": "stable", "stability-flags": [], "prefer-stable": false,
                "prefer-lowest": false, "platform": [], "platform-dev": [], "plugin-api-version": "2.3.0"
            }
            """.write(to: lockfile, atomically: true, encoding: .utf8)
        let warm = try await runWarm(lockfile, config: config, in: directory)
        #expect(warm.status == 1, "\(warm.stdout) \(warm.stderr)")
        #expect(warm.stdout.contains("200  tollgate; fwd=uri-miss; stored  \(base)/dists/acme-checked-1.2.0.zip\n"), "\(warm.stdout)")
        #expect(warm.stdout.contains("302  tollgate; fwd=uri-miss; stored  \(base)/repos/acme/github/zipball/0123abcd\n"), "\(warm.stdout)")
        #expect(warm.stdout.contains("200  tollgate; fwd=uri-miss; stored  \(base)/codeload/acme/github/zipball/0123abcd\n"), "\(warm.stdout)")
        #expect(warm.stdout.contains("stored  \(base)/mirror/acme/mirrored/fedc.zip\n"), "the preferred mirror, filled in: \(warm.stdout)")
        #expect(warm.stdout.contains("failed  \(base)/dists/acme-tampered-0.1.0.tar: integrity mismatch: the lockfile says sha1-"), "\(warm.stdout)")
        #expect(warm.stdout.contains("warmed 4 of 5 URLs"), "\(warm.stdout)")
        #expect(
            origin.requests.map(\.target).sorted()
                == [
                    "/codeload/acme/github/zipball/0123abcd", "/dists/acme-checked-1.2.0.zip", "/dists/acme-tampered-0.1.0.tar",
                    "/mirror/acme/mirrored/fedc.zip", "/repos/acme/github/zipball/0123abcd",
                ]
        )
    }

    @Test("Cargo.lock: crates.io packages are fetched as cargo asks for them (index files, then the download URL; here connect-to rules' local origins) and checked by their checksum; others are left out")
    func cargoLockfile() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let staticPKI = try TestPKI(commonName: "Crates CA", host: "static.crates.io")
        let origin = try await LoopbackOrigin.start(tls: staticPKI.serverConfiguration) { request, respond in
            respond.send(status: 200, headers: ["Cache-Control": "max-age=600"], body: "crate \(request.path)")
        }
        defer { origin.stop() }
        let indexPKI = try TestPKI(commonName: "Index CA", host: "index.crates.io")
        let index = try await LoopbackOrigin.start(tls: indexPKI.serverConfiguration) { request, respond in
            respond.send(status: 200, headers: ["Cache-Control": "max-age=60"], body: "index \(request.path)")
        }
        defer { index.stop() }
        let config = directory.appendingPathComponent("tollgate.yaml")
        try """
            listen:
              - address: "127.0.0.1:0"
            cache:
              path: "\(directory.appendingPathComponent("cache").path)"
            hosts:
              - match: static.crates.io
                connect-to: "127.0.0.1:\(origin.port)"
                trust: { roots: "\(staticPKI.caFile)" }
              - match: index.crates.io
                connect-to: "127.0.0.1:\(index.port)"
                trust: { roots: "\(indexPKI.caFile)" }
            """.write(to: config, atomically: true, encoding: .utf8)
        let lockfile = directory.appendingPathComponent("Cargo.lock")
        try """
            # This file is automatically @generated by Cargo.
            # It is not intended for manual editing.
            version = 3

            [[package]]
            name = "app"
            version = "0.1.0"
            dependencies = [
             "serde",
            ]

            [[package]]
            name = "Serde"
            version = "1.0.130"
            source = "registry+https://github.com/rust-lang/crates.io-index"
            checksum = "\(try await hexDigest("crate /crates/Serde/1.0.130/download", "sha256"))"

            [[package]]
            name = "itoa"
            version = "1.0.1"
            source = "sparse+https://index.crates.io/"
            checksum = "\(try await hexDigest("something else", "sha256"))"

            [[package]]
            name = "cc"
            version = "1.0.0"
            source = "registry+https://github.com/rust-lang/crates.io-index"
            checksum = "\(try await hexDigest("crate /crates/cc/1.0.0/download", "sha256"))"

            [[package]]
            name = "private"
            version = "0.3.0"
            source = "git+https://example.invalid/private.git#abc"
            """.write(to: lockfile, atomically: true, encoding: .utf8)
        let warm = try await runWarm(lockfile, config: config, in: directory)
        #expect(warm.status == 1, "\(warm.stdout) \(warm.stderr)")
        #expect(warm.stdout.contains("stored  https://static.crates.io/crates/Serde/1.0.130/download\n"), "\(warm.stdout)")
        #expect(warm.stdout.contains("stored  https://static.crates.io/crates/cc/1.0.0/download\n"), "\(warm.stdout)")
        #expect(warm.stdout.contains("failed  https://static.crates.io/crates/itoa/1.0.1/download: integrity mismatch: the lockfile says sha256-"), "\(warm.stdout)")
        #expect(warm.stdout.contains("warmed 6 of 7 URLs"), "\(warm.stdout)")
        #expect(origin.requests.map(\.target).sorted() == ["/crates/Serde/1.0.130/download", "/crates/cc/1.0.0/download", "/crates/itoa/1.0.1/download"])
        // The index's config.json once, and each crate's file where cargo looks for it (the
        // name lowercased; 1, 2 and 3 characters have their own directories).
        #expect(index.requests.map(\.target).sorted() == ["/2/cc", "/config.json", "/it/oa/itoa", "/se/rd/serde"])
    }

    @Test("go.sum: .info, .mod and .zip from GOPROXY's first proxy (capitals escaped as the go command escapes them), checked by Go's h1: hashes; a body that is not a module zip, or not the go.mod pinned, fails and leaves the cache")
    func goSum() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try await tarballOrigin()
        defer { origin.stop() }
        let config = try plainConfiguration(in: directory)
        let lockfile = directory.appendingPathComponent("go.sum")
        try """
            github.com/BurntSushi/toml v1.3.2 h1:o7IhLm0Msx3BaB+n3Ag7L8EVlByGKpSR8P2SAyE9Vx8=
            github.com/BurntSushi/toml v1.3.2/go.mod h1:CxXYINrC8qIiEnFrOxCa7Jy5BFHlXnUU2pbicEuybxQ=
            golang.org/x/text v0.3.0/go.mod h1:NqM8EUOU14njkJ3fqMW+pc6Ldnwhi/IjpwHt7yyuwOQ=

            """.write(to: lockfile, atomically: true, encoding: .utf8)
        let proxy = "http://127.0.0.1:\(origin.port)/goproxy"
        let warm = try await runWarm(lockfile, config: config, in: directory, environment: ["GOPROXY": "\(proxy),direct"])
        #expect(warm.status == 1, "\(warm.stdout) \(warm.stderr)")
        let toml = "\(proxy)/github.com/%21burnt%21sushi/toml/@v/v1.3.2"
        #expect(warm.stdout.contains("stored  \(toml).info\n"), "\(warm.stdout)")
        #expect(
            warm.stdout.contains(
                "failed  \(toml).zip: integrity mismatch: the lockfile says h1:o7IhLm0Msx3BaB+n3Ag7L8EVlByGKpSR8P2SAyE9Vx8=, the body is not a module zip: not a zip archive"
            ),
            "\(warm.stdout)"
        )
        #expect(warm.stdout.contains("failed  \(toml).mod: integrity mismatch: the lockfile says h1:CxXYINrC8qIiEnFrOxCa7Jy5BFHlXnUU2pbicEuybxQ=, the body is h1:"), "\(warm.stdout)")
        #expect(warm.stdout.contains("failed  \(proxy)/golang.org/x/text/@v/v0.3.0.mod: integrity mismatch"), "\(warm.stdout)")
        #expect(warm.stdout.contains("warmed 1 of 4 URLs: 1 stored, 0 already fresh, 0 not stored, 3 failed"), "\(warm.stdout)")
        #expect(
            origin.requests.map(\.target).sorted() == [
                "/goproxy/github.com/%21burnt%21sushi/toml/@v/v1.3.2.info", "/goproxy/github.com/%21burnt%21sushi/toml/@v/v1.3.2.mod",
                "/goproxy/github.com/%21burnt%21sushi/toml/@v/v1.3.2.zip", "/goproxy/golang.org/x/text/@v/v0.3.0.mod",
            ]
        )
        let list = try await ChildProcess.run(try #require(tollgateBinary), ["cache", "list", "--config", config.path])
        #expect(!list.stdout.contains(".zip") && !list.stdout.contains(".mod"), "\(list.stdout)")
    }

    @Test("pnpm-lock.yaml (lockfile 9, 6 and 5): each package's tarball at the registry's URL (npm_config_registry), an explicit tarball as it is, checked by integrity; git resolutions left out")
    func pnpmLockfile() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try await tarballOrigin()
        defer { origin.stop() }
        let base = "http://127.0.0.1:\(origin.port)"
        let config = try plainConfiguration(in: directory)
        let lockfile = directory.appendingPathComponent("pnpm-lock.yaml")
        try """
            lockfileVersion: '9.0'

            settings:
              autoInstallPeers: true
              excludeLinksFromLockfile: false

            importers:

              .:
                dependencies:
                  left-pad:
                    specifier: ^1.3.0
                    version: 1.3.0

            packages:

              '@scope/a@1.1.0':
                resolution: {integrity: \(try await integrity("tarball /registry/@scope/a/-/a-1.1.0.tgz"))}
                engines: {node: '>=14'}

              left-pad@1.3.0:
                resolution: {integrity: \(try await integrity("tarball /registry/left-pad/-/left-pad-1.3.0.tgz", "sha1"))}

              tampered@0.0.1:
                resolution: {integrity: \(try await integrity("what the author published"))}

              from-git@1.0.0:
                resolution: {commit: abc123, repo: https://example.invalid/x.git, type: git}

              direct@2.0.0:
                resolution: {tarball: \(base)/elsewhere/direct-2.0.0.tgz}

            snapshots:

              '@scope/a@1.1.0': {}

              left-pad@1.3.0: {}
            """.write(to: lockfile, atomically: true, encoding: .utf8)
        let environment = ["npm_config_registry": "\(base)/registry"]
        let warm = try await runWarm(lockfile, config: config, in: directory, environment: environment)
        #expect(warm.status == 1, "\(warm.stdout) \(warm.stderr)")
        #expect(warm.stdout.contains("stored  \(base)/registry/@scope/a/-/a-1.1.0.tgz\n"), "\(warm.stdout)")
        #expect(warm.stdout.contains("stored  \(base)/registry/left-pad/-/left-pad-1.3.0.tgz\n"), "\(warm.stdout)")
        #expect(warm.stdout.contains("stored  \(base)/elsewhere/direct-2.0.0.tgz\n"), "\(warm.stdout)")
        #expect(warm.stdout.contains("failed  \(base)/registry/tampered/-/tampered-0.0.1.tgz: integrity mismatch"), "\(warm.stdout)")
        #expect(warm.stdout.contains("warmed 3 of 4 URLs"), "\(warm.stdout)")

        // Lockfile 5: NAME/VERSION keys, peers after an underscore; the same tarballs, fresh now.
        let old = directory.appendingPathComponent("old-pnpm-lock.yaml")
        try """
            lockfileVersion: 5.4

            specifiers:
              left-pad: ^1.3.0

            packages:

              /@scope/a/1.1.0_react@18.0.0:
                resolution: {integrity: \(try await integrity("tarball /registry/@scope/a/-/a-1.1.0.tgz"))}
                dev: false

              /left-pad/1.3.0:
                resolution: {integrity: \(try await integrity("tarball /registry/left-pad/-/left-pad-1.3.0.tgz"))}
                dev: false
            """.write(to: old, atomically: true, encoding: .utf8)
        let again = try await runWarm(old, config: config, in: directory, environment: environment)
        #expect(again.status == 0, "\(again.stdout) \(again.stderr)")
        #expect(again.stdout.contains("warmed 2 of 2 URLs: 0 stored, 2 already fresh"), "\(again.stdout)")

        // Lockfile 6: /NAME@VERSION keys, peers in parentheses.
        let six = directory.appendingPathComponent("six-pnpm-lock.yaml")
        try """
            lockfileVersion: '6.0'

            packages:

              /@scope/a@1.1.0(react@18.0.0):
                resolution: {integrity: \(try await integrity("tarball /registry/@scope/a/-/a-1.1.0.tgz"))}
                dev: false

              /left-pad@1.3.0:
                resolution: {integrity: \(try await integrity("tarball /registry/left-pad/-/left-pad-1.3.0.tgz"))}
                dev: false
            """.write(to: six, atomically: true, encoding: .utf8)
        let third = try await runWarm(six, config: config, in: directory, environment: environment)
        #expect(third.status == 0, "\(third.stdout) \(third.stderr)")
        #expect(third.stdout.contains("warmed 2 of 2 URLs: 0 stored, 2 already fresh"), "\(third.stdout)")
        #expect(origin.requestCount == 4)
    }

    @Test("Gemfile.lock: each GEM remote's compact index (versions, info/NAME) and each gem, a platform gem by its full name, checked by CHECKSUMS where given; GIT and PATH sources left out")
    func gemfileLock() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try await tarballOrigin()
        defer { origin.stop() }
        let base = "http://127.0.0.1:\(origin.port)"
        let config = try plainConfiguration(in: directory)
        let lockfile = directory.appendingPathComponent("Gemfile.lock")
        try """
            GIT
              remote: https://example.invalid/private.git
              revision: abc123
              specs:
                private (0.1.0)

            PATH
              remote: .
              specs:
                app (1.0.0)

            GEM
              remote: \(base)/gems-mirror/
              specs:
                nokogiri (1.15.5-x86_64-linux)
                  racc (~> 1.4)
                racc (1.7.3)
                tampered (2.0.0)

            PLATFORMS
              x86_64-linux

            DEPENDENCIES
              nokogiri
              private!

            CHECKSUMS
              nokogiri (1.15.5-x86_64-linux) sha256=\(try await hexDigest("tarball /gems-mirror/gems/nokogiri-1.15.5-x86_64-linux.gem", "sha256"))
              racc (1.7.3)
              tampered (2.0.0) sha256=\(try await hexDigest("what the author published", "sha256"))

            BUNDLED WITH
               2.5.3
            """.write(to: lockfile, atomically: true, encoding: .utf8)
        let warm = try await runWarm(lockfile, config: config, in: directory)
        #expect(warm.status == 1, "\(warm.stdout) \(warm.stderr)")
        let mirror = "\(base)/gems-mirror"
        for stored in ["versions", "info/nokogiri", "info/racc", "info/tampered", "gems/nokogiri-1.15.5-x86_64-linux.gem", "gems/racc-1.7.3.gem"] {
            #expect(warm.stdout.contains("stored  \(mirror)/\(stored)\n"), "\(stored): \(warm.stdout)")
        }
        #expect(warm.stdout.contains("failed  \(mirror)/gems/tampered-2.0.0.gem: integrity mismatch: the lockfile says sha256-"), "\(warm.stdout)")
        #expect(warm.stdout.contains("warmed 6 of 7 URLs"), "\(warm.stdout)")
        #expect(!origin.requests.contains { $0.path.contains("private") || $0.path.contains("app") })
    }
}
