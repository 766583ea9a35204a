import Foundation
import Testing
import TollgateCache
import TollgateHTTP
import TollgateTesting

/// cargo on PATH when it is 1.70 or later (crates.io through the sparse index by default), else nil.
private let sparseCargo: String? = {
    guard let cargo = executableOnPath("cargo") else { return nil }
    guard let text = (try? ChildProcess.runBlocking(cargo, ["--version"]))?.stdout else { return nil }
    // "cargo 1.95.0 (…)"
    let parts = text.split(separator: " ").dropFirst().first?.split(separator: ".").compactMap { Int($0) } ?? []
    guard parts.count >= 2, parts[0] > 1 || parts[1] >= 70 else { return nil }
    return cargo
}()

/// The CI use from end to end with the package managers themselves: `tollgate warm LOCKFILE`
/// fills the cache from the lockfile alone (no package manager runs online), then the package
/// manager installs through `tollgate serve --offline` with the registries gone. The registries
/// are local TLS origins standing in for index.crates.io, static.crates.io, registry.npmjs.org,
/// proxy.golang.org, rubygems.org and index.rubygems.org, api.github.com and codeload.github.com (`connect-to`), answering with `Vary: Accept-Encoding` as CDNs do: the warm
/// asks without Accept-Encoding, cargo and npm ask with gzip, and offline the stored identity
/// bytes are what they get.
@Suite(
    "A lockfile warmed, then installed offline by cargo, npm, go, bundler and composer (the built executable)",
    .serialized,
    .timeLimit(.minutes(3)),
    .enabled(if: tollgateBinary != nil)
)
struct LockfileWarmOfflineBuildTests {
    /// A registry origin for `host`: each path in `files` with its bytes, anything else 404.
    private func registry(_ pki: TestPKI, _ files: [String: [UInt8]]) async throws -> LoopbackOrigin {
        try await LoopbackOrigin.start(tls: pki.serverConfiguration) { request, respond in
            guard let bytes = files[request.path] else {
                respond.send(status: 404, body: "no such file: \(request.path)")
                return
            }
            respond.send(
                status: 200,
                // The body's MD5 as its ETag, as rubygems.org's compact index sends it (Bundler checks it).
                headers: [
                    "Cache-Control": "max-age=600", "Vary": "Accept-Encoding",
                    "ETag": "\"\(SHA256.hex(MessageDigest.hash(.md5, bytes)))\"",
                ],
                bytes: bytes
            )
        }
    }

    /// `tar czf` of `directory/name` (a package's tree), its bytes and SHA-256.
    private func tarball(of name: String, in directory: URL, files: [String: String]) async throws -> [UInt8] {
        for (path, text) in files {
            let file = directory.appendingPathComponent(name).appendingPathComponent(path)
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try text.write(to: file, atomically: true, encoding: .utf8)
        }
        let archive = directory.appendingPathComponent("\(name).tgz").path
        let made = try await ChildProcess.run("/bin/sh", ["-c", "cd '\(directory.path)' && tar czf '\(archive)' '\(name)'"])
        #expect(made.status == 0, "\(made.stderr)")
        return Array(try Data(contentsOf: URL(fileURLWithPath: archive)))
    }

    @Test(
        "cargo fetch --locked offline: the index's config.json, the crate's index file and the crate as cargo names it were all warmed from Cargo.lock",
        .enabled(if: sparseCargo != nil, "needs cargo 1.70 or later (the sparse index)")
    )
    func cargoOffline() async throws {
        let cargo = try #require(sparseCargo)
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let crate = try await tarball(
            of: "tgdemo-0.1.0", in: directory,
            files: [
                "Cargo.toml": "[package]\nname = \"tgdemo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
                "src/lib.rs": "pub fn answer() -> u32 { 42 }\n",
            ]
        )
        let checksum = SHA256.hex(SHA256.hash(crate))
        let indexPKI = try TestPKI(commonName: "Index CA", host: "index.crates.io")
        let staticPKI = try TestPKI(commonName: "Static CA", host: "static.crates.io")
        let index = try await registry(indexPKI, [
            "/config.json": Array(#"{"dl":"https://static.crates.io/crates","api":"https://crates.io"}"#.utf8),
            "/tg/de/tgdemo": Array((#"{"name":"tgdemo","vers":"0.1.0","deps":[],"cksum":""# + checksum + #"","features":{},"yanked":false}"# + "\n").utf8),
        ])
        defer { index.stop() }
        let downloads = try await registry(staticPKI, ["/crates/tgdemo/0.1.0/download": crate])
        defer { downloads.stop() }

        let (config, caFile) = try await interceptingConfiguration(
            directory: directory, registries: [("index.crates.io", indexPKI, index.port), ("static.crates.io", staticPKI, downloads.port)]
        )
        let project = directory.appendingPathComponent("app")
        try FileManager.default.createDirectory(at: project.appendingPathComponent("src"), withIntermediateDirectories: true)
        try "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\ntgdemo = \"=0.1.0\"\n"
            .write(to: project.appendingPathComponent("Cargo.toml"), atomically: true, encoding: .utf8)
        try "".write(to: project.appendingPathComponent("src/lib.rs"), atomically: true, encoding: .utf8)
        let lockfile = project.appendingPathComponent("Cargo.lock")
        try """
            # This file is automatically @generated by Cargo.
            # It is not intended for manual editing.
            version = 3

            [[package]]
            name = "app"
            version = "0.1.0"
            dependencies = [
             "tgdemo",
            ]

            [[package]]
            name = "tgdemo"
            version = "0.1.0"
            source = "registry+https://github.com/rust-lang/crates.io-index"
            checksum = "\(checksum)"

            """.write(to: lockfile, atomically: true, encoding: .utf8)

        let served = try await serveOfflineAfterWarming(lockfile: lockfile, config: config, directory: directory, origins: [index, downloads])
        defer { served.child.kill() }
        let proxy = "http://127.0.0.1:\(try served.port("forward"))"
        let fetched = try await ChildProcess.run(
            "/bin/sh", ["-c", "cd '\(project.path)' && exec '\(cargo)' fetch --locked"],
            environment: [
                "CARGO_HOME": directory.appendingPathComponent("cargo-home").path,
                "HTTPS_PROXY": proxy, "https_proxy": proxy, "NO_PROXY": "", "no_proxy": "",
                "CARGO_HTTP_CAINFO": caFile, "CARGO_NET_RETRY": "0",
                "CARGO_REGISTRIES_CRATES_IO_PROTOCOL": "sparse",
            ]
        )
        let (misses, gets) = try await stopOffline(served, directory: directory)
        #expect(fetched.status == 0, "cargo: \(fetched.stdout) \(fetched.stderr)")
        #expect(misses == "[]", "\(misses)")
        let cached = try FileManager.default.subpathsOfDirectory(atPath: directory.appendingPathComponent("cargo-home/registry/cache").path)
        let file = try #require(cached.first { $0.hasSuffix("/tgdemo-0.1.0.crate") }, "\(cached)")
        #expect(Array(try Data(contentsOf: directory.appendingPathComponent("cargo-home/registry/cache/\(file)"))) == crate)
        #expect(gets.count >= 3, "\(gets)")
        #expect(gets.allSatisfy { $0.contains("\"cache\":\"hit\"") }, "\(gets)")
        // cargo asked with Accept-Encoding: the identity bytes the warm stored were given to it.
        #expect(gets.contains { $0.contains("https://static.crates.io/crates/tgdemo/0.1.0/download") }, "\(gets)")
    }

    @Test(
        "npm ci offline: every resolved tarball of package-lock.json was warmed, and npm installs from the proxy with the registry gone",
        .enabled(if: executableOnPath("npm") != nil, "needs npm")
    )
    func npmOffline() async throws {
        let npm = try #require(executableOnPath("npm"))
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let tarballBytes = try await tarball(
            of: "package", in: directory,
            files: [
                "package.json": #"{"name":"tgdemo","version":"1.0.0","main":"index.js"}"#,
                "index.js": "module.exports = 42;\n",
            ]
        )
        let digest = try await ChildProcess.run(
            "/bin/sh", ["-c", "openssl dgst -sha512 -binary '\(directory.appendingPathComponent("package.tgz").path)' | base64 -w0"]
        )
        let integrity = "sha512-" + digest.stdout
        let pki = try TestPKI(commonName: "Registry CA", host: "registry.npmjs.org")
        let origin = try await registry(pki, ["/tgdemo/-/tgdemo-1.0.0.tgz": tarballBytes])
        defer { origin.stop() }

        let (config, caFile) = try await interceptingConfiguration(
            directory: directory, registries: [("registry.npmjs.org", pki, origin.port)]
        )
        let project = directory.appendingPathComponent("app")
        try FileManager.default.createDirectory(at: project, withIntermediateDirectories: true)
        try #"{"name":"app","version":"1.0.0","dependencies":{"tgdemo":"1.0.0"}}"#
            .write(to: project.appendingPathComponent("package.json"), atomically: true, encoding: .utf8)
        let lockfile = project.appendingPathComponent("package-lock.json")
        try """
            {
              "name": "app", "version": "1.0.0", "lockfileVersion": 3, "requires": true,
              "packages": {
                "": { "name": "app", "version": "1.0.0", "dependencies": { "tgdemo": "1.0.0" } },
                "node_modules/tgdemo": { "version": "1.0.0", "resolved": "https://registry.npmjs.org/tgdemo/-/tgdemo-1.0.0.tgz", "integrity": "\(integrity)" }
              }
            }
            """.write(to: lockfile, atomically: true, encoding: .utf8)

        let served = try await serveOfflineAfterWarming(lockfile: lockfile, config: config, directory: directory, origins: [origin])
        defer { served.child.kill() }
        let proxy = "http://127.0.0.1:\(try served.port("forward"))"
        let installed = try await ChildProcess.run(
            "/bin/sh",
            ["-c", "cd '\(project.path)' && exec '\(npm)' ci --no-audit --no-fund --ignore-scripts --prefer-online"],
            environment: [
                "npm_config_cache": directory.appendingPathComponent("npm-cache").path,
                "npm_config_userconfig": directory.appendingPathComponent("npmrc").path,
                "npm_config_registry": "https://registry.npmjs.org/",
                "npm_config_https_proxy": proxy, "npm_config_proxy": proxy, "npm_config_noproxy": "",
                "npm_config_cafile": caFile, "npm_config_update_notifier": "false",
                "npm_config_fetch_retries": "0", "HOME": directory.path,
            ]
        )
        let (misses, gets) = try await stopOffline(served, directory: directory)
        #expect(installed.status == 0, "npm: \(installed.stdout) \(installed.stderr)")
        #expect(misses == "[]", "\(misses)")
        let main = try String(contentsOf: project.appendingPathComponent("node_modules/tgdemo/index.js"), encoding: .utf8)
        #expect(main == "module.exports = 42;\n")
        #expect(gets.count == 1 && gets.allSatisfy { $0.contains("\"cache\":\"hit\"") }, "\(gets)")
    }

    @Test(
        "go build offline from a cache warmed by the go.sum go wrote online: the module proxy's .mod, .info and .zip, checked by Go's own h1: hashes",
        .enabled(if: executableOnPath("go") != nil && python3(importing: "zipfile") != nil, "needs go and python3")
    )
    func goOffline() async throws {
        let go = try #require(executableOnPath("go"))
        let python = try #require(python3(importing: "zipfile"))
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // The module zip as the proxy protocol has it: every file under MODULE@VERSION/, deflated
        // (one stored as it is: the warm reads both methods).
        let goMod = "module example.com/TGDemo\n\ngo 1.19\n"
        let zipPath = directory.appendingPathComponent("module.zip").path
        let made = try await ChildProcess.run(
            python,
            [
                "-c",
                """
                import sys, zipfile
                with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
                    z.writestr("example.com/TGDemo@v1.0.0/go.mod", sys.argv[2])
                    z.writestr("example.com/TGDemo@v1.0.0/LICENSE", "stored, not deflated\\n", compress_type=zipfile.ZIP_STORED)
                    z.writestr("example.com/TGDemo@v1.0.0/tgdemo.go", "package tgdemo\\n\\n" + "// deflated well\\n" * 200 + "func Answer() int { return 42 }\\n")
                """,
                zipPath, goMod,
            ]
        )
        #expect(made.status == 0, "\(made.stderr)")
        let moduleZip = Array(try Data(contentsOf: URL(fileURLWithPath: zipPath)))
        let info = Array(#"{"Version":"v1.0.0","Time":"2026-01-01T00:00:00Z"}"#.utf8)
        let pki = try TestPKI(commonName: "Module Proxy CA", host: "proxy.golang.org")
        // Module paths with capitals are escaped in the protocol's URLs (`!t!g!demo`), and the `!`
        // percent-encoded in Go's.
        let origin = try await registry(pki, [
            "/example.com/%21t%21g%21demo/@v/list": Array("v1.0.0\n".utf8),
            "/example.com/%21t%21g%21demo/@v/v1.0.0.info": info,
            "/example.com/%21t%21g%21demo/@latest": info,
            "/example.com/%21t%21g%21demo/@v/v1.0.0.mod": Array(goMod.utf8),
            "/example.com/%21t%21g%21demo/@v/v1.0.0.zip": moduleZip,
        ])
        defer { origin.stop() }

        let registries: [InterceptedRegistry] = [("proxy.golang.org", pki, origin.port)]
        let (lockConfig, caFile) = try await interceptingConfiguration(directory: directory, registries: registries, cache: "lock-cache")
        let (config, _) = try await interceptingConfiguration(directory: directory, registries: registries)
        let project = directory.appendingPathComponent("app")
        try FileManager.default.createDirectory(at: project, withIntermediateDirectories: true)
        try "module app\n\ngo 1.19\n\nrequire example.com/TGDemo v1.0.0\n"
            .write(to: project.appendingPathComponent("go.mod"), atomically: true, encoding: .utf8)
        try "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/TGDemo\"\n)\n\nfunc main() { fmt.Println(tgdemo.Answer()) }\n"
            .write(to: project.appendingPathComponent("main.go"), atomically: true, encoding: .utf8)
        /// `go ARGUMENTS` in the project through the proxy on `port`, with module and build caches of `cache`.
        func run(_ arguments: String, port: Int, cache: String, sumdb: Bool) async throws -> (status: Int32, stdout: String, stderr: String) {
            let proxy = "http://127.0.0.1:\(port)"
            var environment = [
                "HOME": directory.path, "GOPATH": directory.appendingPathComponent(cache).path,
                "GOCACHE": directory.appendingPathComponent(cache + "-build").path, "GOPROXY": "https://proxy.golang.org",
                "GOFLAGS": "-mod=mod", "HTTPS_PROXY": proxy, "https_proxy": proxy, "NO_PROXY": "", "no_proxy": "",
                "SSL_CERT_FILE": caFile, "GOTOOLCHAIN": "local", "CGO_ENABLED": "0",
            ]
            // The developer's machine writes go.sum without asking sum.golang.org (not on this machine).
            if !sumdb { environment["GONOSUMDB"] = "example.com" }
            return try await ChildProcess.run("/bin/sh", ["-c", "cd '\(project.path)' && exec '\(go)' \(arguments)"], environment: environment)
        }
        // The developer's side: go writes go.sum online, through a proxy with a cache of its own.
        do {
            let online = try await Served.start(["--config", lockConfig.path], directory: directory, lines: 1)
            defer { online.child.kill() }
            let tidy = try await run("mod tidy", port: try online.port("forward"), cache: "gopath-lock", sumdb: false)
            #expect(tidy.status == 0, "go mod tidy: \(tidy.stdout) \(tidy.stderr)")
            online.child.send(SIGTERM)
            _ = try await online.child.waitForExit()
        }
        try? FileManager.default.removeItem(at: directory.appendingPathComponent("access.log"))
        let lockfile = project.appendingPathComponent("go.sum")
        let sums = try String(contentsOf: lockfile, encoding: .utf8)
        #expect(sums.contains("example.com/TGDemo v1.0.0 h1:") && sums.contains("example.com/TGDemo v1.0.0/go.mod h1:"), "\(sums)")

        // CI: the warm from go.sum alone (the hashes go computed, checked by the warm), then the
        // build with the module proxy gone and sum.golang.org asked for nothing.
        let served = try await serveOfflineAfterWarming(lockfile: lockfile, config: config, directory: directory, origins: [origin])
        defer { served.child.kill() }
        let built = try await run("build -o app .", port: try served.port("forward"), cache: "gopath-build", sumdb: true)
        let (misses, gets) = try await stopOffline(served, directory: directory)
        #expect(built.status == 0, "go build: \(built.stdout) \(built.stderr)")
        #expect(misses == "[]", "\(misses)")
        #expect(FileManager.default.isExecutableFile(atPath: project.appendingPathComponent("app").path))
        #expect(gets.contains { $0.contains("/@v/v1.0.0.zip") } && gets.allSatisfy { $0.contains("\"cache\":\"hit\"") }, "\(gets)")
    }

    @Test(
        "bundle install offline from a cache warmed by Gemfile.lock: the compact index on index.rubygems.org, the gem on rubygems.org",
        .enabled(if: executableOnPath("bundle") != nil && executableOnPath("gem") != nil, "needs Bundler and RubyGems")
    )
    func bundlerOffline() async throws {
        let bundle = try #require(executableOnPath("bundle"))
        let gem = try #require(executableOnPath("gem"))
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // A real gem, built by `gem build`.
        let source = directory.appendingPathComponent("gem")
        try FileManager.default.createDirectory(at: source.appendingPathComponent("lib"), withIntermediateDirectories: true)
        try "module TGDemo; ANSWER = 42; end\n".write(to: source.appendingPathComponent("lib/tgdemo.rb"), atomically: true, encoding: .utf8)
        try """
            Gem::Specification.new do |s|
              s.name = "tgdemo"
              s.version = "1.0.0"
              s.summary = "demo"
              s.authors = ["CI"]
              s.files = ["lib/tgdemo.rb"]
              s.license = "MIT"
            end
            """.write(to: source.appendingPathComponent("tgdemo.gemspec"), atomically: true, encoding: .utf8)
        let built = try await ChildProcess.run("/bin/sh", ["-c", "cd '\(source.path)' && exec '\(gem)' build tgdemo.gemspec"], environment: ["HOME": directory.path])
        #expect(built.status == 0, "gem build: \(built.stderr)")
        let gemBytes = Array(try Data(contentsOf: source.appendingPathComponent("tgdemo-1.0.0.gem")))
        let info = "---\n1.0.0 |checksum:\(SHA256.hex(SHA256.hash(gemBytes)))\n"
        let versions = "created_at: 2026-01-01T00:00:00Z\n---\ntgdemo 1.0.0 \(SHA256.hex(MessageDigest.hash(.md5, Array(info.utf8))))\n"
        let indexPKI = try TestPKI(commonName: "Index CA", host: "index.rubygems.org")
        let index = try await registry(indexPKI, ["/versions": Array(versions.utf8), "/info/tgdemo": Array(info.utf8)])
        defer { index.stop() }
        let gemsPKI = try TestPKI(commonName: "Gems CA", host: "rubygems.org")
        let gems = try await registry(gemsPKI, ["/gems/tgdemo-1.0.0.gem": gemBytes])
        defer { gems.stop() }

        let (config, caFile) = try await interceptingConfiguration(
            directory: directory, registries: [("index.rubygems.org", indexPKI, index.port), ("rubygems.org", gemsPKI, gems.port)]
        )
        let project = directory.appendingPathComponent("app")
        try FileManager.default.createDirectory(at: project, withIntermediateDirectories: true)
        try "source \"https://rubygems.org\"\ngem \"tgdemo\", \"1.0.0\"\n"
            .write(to: project.appendingPathComponent("Gemfile"), atomically: true, encoding: .utf8)
        let lockfile = project.appendingPathComponent("Gemfile.lock")
        try """
            GEM
              remote: https://rubygems.org/
              specs:
                tgdemo (1.0.0)

            PLATFORMS
              ruby
              x86_64-linux

            DEPENDENCIES
              tgdemo (= 1.0.0)

            BUNDLED WITH
               2.3.15

            """.write(to: lockfile, atomically: true, encoding: .utf8)

        let served = try await serveOfflineAfterWarming(lockfile: lockfile, config: config, directory: directory, origins: [index, gems])
        defer { served.child.kill() }
        let proxy = "http://127.0.0.1:\(try served.port("forward"))"
        let installed = try await ChildProcess.run(
            "/bin/sh", ["-c", "cd '\(project.path)' && exec '\(bundle)' install"],
            environment: [
                "HOME": directory.path, "BUNDLE_PATH": directory.appendingPathComponent("bundle").path,
                "BUNDLE_USER_HOME": directory.appendingPathComponent("bundle-home").path, "BUNDLE_RETRY": "0",
                // Bundler's HTTP client takes the proxy for https too from http_proxy.
                "http_proxy": proxy, "HTTP_PROXY": proxy, "HTTPS_PROXY": proxy, "https_proxy": proxy,
                "NO_PROXY": "", "no_proxy": "",
                "SSL_CERT_FILE": caFile,
            ]
        )
        let (misses, gets) = try await stopOffline(served, directory: directory)
        #expect(installed.status == 0, "bundle install: \(installed.stdout) \(installed.stderr)")
        #expect(misses == "[]", "\(misses)")
        let files = try FileManager.default.subpathsOfDirectory(atPath: directory.appendingPathComponent("bundle").path)
        #expect(files.contains { $0.hasSuffix("gems/tgdemo-1.0.0/lib/tgdemo.rb") }, "\(files.filter { $0.contains("tgdemo") })")
        #expect(gets.count == 3 && gets.allSatisfy { $0.contains("\"cache\":\"hit\"") }, "\(gets)")
    }

    @Test(
        "composer install offline from a cache warmed by composer.lock: the dist zipball on api.github.com, redirected to codeload.github.com",
        .enabled(if: executableOnPath("composer") != nil && executableOnPath("php") != nil, "needs Composer and PHP")
    )
    func composerOffline() async throws {
        let composer = try #require(executableOnPath("composer"))
        let php = try #require(executableOnPath("php"))
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // The package's zipball as GitHub makes it: one top directory holding the package.
        let zipPath = directory.appendingPathComponent("demo.zip").path
        let zipped = try await ChildProcess.run(
            "/usr/bin/python3",
            [
                "-c",
                """
                import sys, zipfile
                with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
                    z.writestr("acme-demo-0123abc/composer.json", '{"name": "acme/demo", "autoload": {"psr-4": {"Acme\\\\Demo\\\\": "src/"}}}')
                    z.writestr("acme-demo-0123abc/src/Answer.php", "<?php\\nnamespace Acme\\\\Demo;\\n\\nclass Answer { const VALUE = 42; }\\n")
                """,
                zipPath,
            ]
        )
        #expect(zipped.status == 0, "\(zipped.stderr)")
        let zipBytes = Array(try Data(contentsOf: URL(fileURLWithPath: zipPath)))
        let reference = "0123abcd0123abcd0123abcd0123abcd0123abcd"
        let apiPKI = try TestPKI(commonName: "API CA", host: "api.github.com")
        let api = try await LoopbackOrigin.start(tls: apiPKI.serverConfiguration) { request, respond in
            respond.send(
                status: 302,
                headers: ["Location": "https://codeload.github.com/acme/demo/legacy.zip/\(reference)", "Cache-Control": "public, max-age=60"],
                body: ""
            )
        }
        defer { api.stop() }
        let codeloadPKI = try TestPKI(commonName: "Codeload CA", host: "codeload.github.com")
        let codeload = try await registry(codeloadPKI, ["/acme/demo/legacy.zip/\(reference)": zipBytes])
        defer { codeload.stop() }
        let (config, caFile) = try await interceptingConfiguration(
            directory: directory, registries: [("api.github.com", apiPKI, api.port), ("codeload.github.com", codeloadPKI, codeload.port)]
        )
        let project = directory.appendingPathComponent("app")
        try FileManager.default.createDirectory(at: project, withIntermediateDirectories: true)
        try #"{"require": {"acme/demo": "1.0.0"}}"#.write(to: project.appendingPathComponent("composer.json"), atomically: true, encoding: .utf8)
        let lockfile = project.appendingPathComponent("composer.lock")
        try """
            {
                "_readme": ["This file locks the dependencies of your project to a known state"],
                "content-hash": "d41d8cd98f00b204e9800998ecf8427e",
                "packages": [
                    {"name": "acme/demo", "version": "1.0.0",
                     "source": {"type": "git", "url": "https://github.com/acme/demo.git", "reference": "\(reference)"},
                     "dist": {"type": "zip", "url": "https://api.github.com/repos/acme/demo/zipball/\(reference)", "reference": "\(reference)", "shasum": ""},
                     "type": "library", "autoload": {"psr-4": {"Acme\\\\Demo\\\\": "src/"}}}
                ],
                "packages-dev": [], "aliases": [], "minimum-stability": "stable", "stability-flags": [], "prefer-stable": false,
                "prefer-lowest": false, "platform": [], "platform-dev": [], "plugin-api-version": "2.3.0"
            }
            """.write(to: lockfile, atomically: true, encoding: .utf8)

        let served = try await serveOfflineAfterWarming(lockfile: lockfile, config: config, directory: directory, origins: [api, codeload])
        defer { served.child.kill() }
        let proxy = "http://127.0.0.1:\(try served.port("forward"))"
        let installed = try await ChildProcess.run(
            "/bin/sh", ["-c", "cd '\(project.path)' && exec '\(composer)' install --no-interaction --no-progress --prefer-dist"],
            environment: [
                "HOME": directory.path, "COMPOSER_HOME": directory.appendingPathComponent("composer-home").path,
                "COMPOSER_CACHE_DIR": directory.appendingPathComponent("composer-cache").path, "COMPOSER_ALLOW_SUPERUSER": "1",
                "http_proxy": proxy, "https_proxy": proxy, "HTTP_PROXY": proxy, "HTTPS_PROXY": proxy, "no_proxy": "", "NO_PROXY": "",
                "SSL_CERT_FILE": caFile,
            ]
        )
        let (misses, gets) = try await stopOffline(served, directory: directory)
        #expect(installed.status == 0, "composer install: \(installed.stdout) \(installed.stderr)")
        #expect(misses == "[]", "\(misses)")
        let answer = try await ChildProcess.run(
            php, ["-r", "require '\(project.path)/vendor/autoload.php'; echo \\Acme\\Demo\\Answer::VALUE;"]
        )
        #expect(answer.stdout == "42", "\(answer.stdout) \(answer.stderr)")
        #expect(gets.count == 2 && gets.allSatisfy { $0.contains("\"cache\":\"hit\"") }, "\(gets)")
    }
}
