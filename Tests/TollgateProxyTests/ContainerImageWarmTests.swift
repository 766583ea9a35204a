import Foundation
import Testing
import TollgateCache
import TollgateHTTP
import TollgateTesting

/// `tollgate warm Dockerfile`: the images a Dockerfile builds from, fetched as a client pulling
/// them asks for them, then pulled offline by skopeo (the containers/image library podman and
/// buildah use) through the proxy from the cache alone.
@Suite(
    "tollgate warm of a Dockerfile, then skopeo pulling its image offline (the built executable)",
    .serialized,
    .timeLimit(.minutes(3)),
    .enabled(if: tollgateBinary != nil && executableOnPath("skopeo") != nil, "needs skopeo")
)
struct ContainerImageWarmTests {
    /// What ``imageLayout(in:)`` made: the digests of the index and of each platform's manifest,
    /// config and layer, and the layers' bytes.
    struct Layout: Decodable {
        struct Image: Decodable {
            var manifest: String
            var config: String
            var layer: String
        }

        var index: String
        var amd64: Image
        var arm64: Image
    }

    /// An OCI image layout in `directory/layout` tagged `1`: an index of two images, linux/amd64
    /// and linux/arm64, each one gzipped tar layer holding `hello.txt` ("amd64 hello",
    /// "arm64 hello").
    private func imageLayout(in directory: URL) async throws -> (path: String, layout: Layout) {
        let path = directory.appendingPathComponent("layout").path
        let made = try await ChildProcess.run(
            "/usr/bin/python3",
            [
                "-c",
                """
                import gzip, hashlib, io, json, os, sys, tarfile
                root = sys.argv[1]
                blobs = os.path.join(root, "blobs", "sha256")
                os.makedirs(blobs)
                def put(data):
                    digest = hashlib.sha256(data).hexdigest()
                    open(os.path.join(blobs, digest), "wb").write(data)
                    return {"digest": "sha256:" + digest, "size": len(data)}
                found = {}
                entries = []
                for arch in ("amd64", "arm64"):
                    tar = io.BytesIO()
                    with tarfile.open(fileobj=tar, mode="w") as archive:
                        text = (arch + " hello\\n").encode()
                        info = tarfile.TarInfo("hello.txt")
                        info.size = len(text)
                        archive.addfile(info, io.BytesIO(text))
                    layer = put(gzip.compress(tar.getvalue(), mtime=0))
                    config = put(json.dumps({"architecture": arch, "os": "linux", "config": {},
                        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(tar.getvalue()).hexdigest()]}}).encode())
                    manifest = put(json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                        "config": dict(config, mediaType="application/vnd.oci.image.config.v1+json"),
                        "layers": [dict(layer, mediaType="application/vnd.oci.image.layer.v1.tar+gzip")]}).encode())
                    entries.append(dict(manifest, mediaType="application/vnd.oci.image.manifest.v1+json",
                        platform={"architecture": arch, "os": "linux"}))
                    found[arch] = {"manifest": manifest["digest"], "config": config["digest"], "layer": layer["digest"]}
                index = put(json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
                    "manifests": entries}).encode())
                found["index"] = index["digest"]
                json.dump({"schemaVersion": 2, "manifests": [dict(index, mediaType="application/vnd.oci.image.index.v1+json",
                    annotations={"org.opencontainers.image.ref.name": "1"})]}, open(os.path.join(root, "index.json"), "w"))
                open(os.path.join(root, "oci-layout"), "w").write('{"imageLayoutVersion": "1.0.0"}')
                print(json.dumps(found))
                """,
                path,
            ]
        )
        #expect(made.status == 0, "\(made.stderr)")
        return (path, try JSONDecoder().decode(Layout.self, from: Data(made.stdout.utf8)))
    }

    /// A blob of the layout, by digest.
    private func blob(_ digest: String, in layout: String) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: "\(layout)/blobs/sha256/\(digest.dropFirst("sha256:".count))"))
    }

    /// `skopeo copy` of `image` for linux/amd64 into `directory/pulled` through the proxy at `port`,
    /// trusting `caFile`; its result.
    private func pull(_ image: String, port: Int, caFile: String, directory: URL) async throws -> (status: Int32, stdout: String, stderr: String) {
        let policy = directory.appendingPathComponent("policy.json")
        try #"{"default": [{"type": "insecureAcceptAnything"}]}"#.write(to: policy, atomically: true, encoding: .utf8)
        let proxy = "http://127.0.0.1:\(port)"
        return try await ChildProcess.run(
            try #require(executableOnPath("skopeo")),
            [
                "--policy", policy.path, "copy", "--override-os", "linux", "--override-arch", "amd64",
                "docker://\(image)", "dir:\(directory.appendingPathComponent("pulled").path)",
            ],
            environment: [
                "HOME": directory.path, "XDG_RUNTIME_DIR": directory.path, "HTTPS_PROXY": proxy, "https_proxy": proxy,
                "NO_PROXY": "", "no_proxy": "", "SSL_CERT_FILE": caFile,
            ]
        )
    }

    @Test(
        "a Dockerfile's image warmed from docker-registry (index, amd64 manifest, config, layer: each checked by digest), then skopeo copies it offline; a Compose file's images warmed",
        .enabled(if: DistributionRegistry.executable != nil, "needs docker-registry")
    )
    func distributionRegistryOffline() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let pki = try TestPKI(commonName: "Registry CA", host: "registry.test")
        let registry = try await DistributionRegistry.start(pki: pki, host: "registry.test", directory: directory)
        defer { registry.stop() }
        let (layoutPath, layout) = try await imageLayout(in: directory)
        let pushed = try await ChildProcess.run(
            try #require(executableOnPath("skopeo")),
            [
                "--insecure-policy", "copy", "--all", "--dest-tls-verify=false",
                "oci:\(layoutPath):1", "docker://127.0.0.1:\(registry.port)/tg/hello:1",
            ],
            environment: ["HOME": directory.path, "XDG_RUNTIME_DIR": directory.path]
        )
        try #require(pushed.status == 0, "skopeo push: \(pushed.stderr)")
        let (config, caFile) = try await interceptingConfiguration(
            directory: directory, registries: [("registry.test", pki, registry.port)]
        )
        let dockerfile = directory.appendingPathComponent("Dockerfile")
        // Build arguments' defaults, a stage named and used again, COPY --from a stage, scratch.
        try """
            # syntax=docker/dockerfile:1
            ARG BASE=registry.test/tg/hello
            ARG TAG=1
            FROM ${BASE}:$TAG AS build
            RUN echo built > /built
            FROM build AS again
            FROM scratch
            COPY --from=build /built /built
            """.write(to: dockerfile, atomically: true, encoding: .utf8)

        // A Dockerfile naming a tag the registry does not have, and a build argument without a default.
        let broken = directory.appendingPathComponent("Broken.Dockerfile")
        try "FROM registry.test/tg/hello:2\nFROM $NOWHERE/app\n".write(to: broken, atomically: true, encoding: .utf8)
        let failed = try await ChildProcess.run(
            try #require(tollgateBinary), ["warm", "--config", config.path, broken.path],
            environment: ["XDG_DATA_HOME": directory.appendingPathComponent("data").path]
        )
        #expect(failed.status == 1)
        #expect(failed.stderr.contains("Broken.Dockerfile:2: '$NOWHERE/app' uses a build argument with no default"), "\(failed.stderr)")
        #expect(failed.stderr.contains("registry.test/tg/hello:2: the manifest https://registry.test/v2/tg/hello/manifests/2 is not in the cache"), "\(failed.stderr)")

        // A Compose file (its own cache): a service built from the Dockerfile, whose image is the
        // one built, and a service pinned by digest for arm64, the digest from `.env`.
        let compose = directory.appendingPathComponent("compose.yaml")
        try """
            services:
              app:
                build: { context: ., dockerfile: Dockerfile }
                image: acme/app:dev
              db:
                image: "${REGISTRY:-registry.test}/tg/hello@${HELLO_DIGEST}"
                platform: linux/arm64
            """.write(to: compose, atomically: true, encoding: .utf8)
        try "HELLO_DIGEST=\(layout.index)\n".write(to: directory.appendingPathComponent(".env"), atomically: true, encoding: .utf8)
        let (composeConfig, _) = try await interceptingConfiguration(
            directory: directory, registries: [("registry.test", pki, registry.port)], cache: "compose-cache"
        )
        let composed = try await ChildProcess.run(
            try #require(tollgateBinary), ["warm", "--config", composeConfig.path, compose.path],
            environment: ["XDG_DATA_HOME": directory.appendingPathComponent("data").path]
        )
        #expect(composed.status == 0, "\(composed.stdout) \(composed.stderr)")
        for digest in [layout.index, layout.amd64.manifest, layout.amd64.layer, layout.arm64.manifest, layout.arm64.layer] {
            #expect(composed.stdout.contains(digest), "\(digest) not warmed: \(composed.stdout)")
        }
        #expect(!composed.stdout.contains("acme"), "the built image is not pulled: \(composed.stdout)")

        let served = try await serveOfflineAfterWarming(lockfile: dockerfile, config: config, directory: directory, origins: [])
        defer { served.child.kill() }
        registry.stop()
        let port = try served.port("forward")
        let pulled = try await pull("registry.test/tg/hello:1", port: port, caFile: caFile, directory: directory)
        /// The status of a GET of `path` on the registry through the offline proxy.
        func status(of path: String) async throws -> String {
            try await ChildProcess.run(
                "/usr/bin/curl",
                ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-x", "http://127.0.0.1:\(port)", "--cacert", caFile, "https://registry.test\(path)"]
            ).stdout
        }
        // containerd asks for a tag's manifest again by its digest; the arm64 image was not warmed.
        #expect(try await status(of: "/v2/tg/hello/manifests/\(layout.index)") == "200")
        #expect(try await status(of: "/v2/tg/hello/manifests/\(layout.arm64.manifest)") == "504")
        let (misses, gets) = try await stopOffline(served, directory: directory)
        #expect(pulled.status == 0, "skopeo copy offline: \(pulled.stdout) \(pulled.stderr)")
        #expect(misses.contains(layout.arm64.manifest) && misses.components(separatedBy: "\"url\"").count == 2, "\(misses)")
        let copied = try Data(contentsOf: directory.appendingPathComponent("pulled").appendingPathComponent(String(layout.amd64.layer.dropFirst(7))))
        #expect(copied == (try blob(layout.amd64.layer, in: layoutPath)))
        // The version check, the index by tag, the amd64 manifest, its config and its layer, and the index by
        // digest, each from the cache (the manifests, which carry no freshness, stale).
        let served200 = gets.filter { $0.contains("\"status\":200") }
        #expect(served200.count == 6 && served200.allSatisfy { $0.contains("\"cache\":\"hit\"") || $0.contains("\"cache\":\"stale\"") }, "\(gets)")
    }

    @Test(
        "a registry with token authentication (Docker Hub's flow): a pull token asked once with the realm's login, never stored; blobs redirected to storage without freshness, stored under force-ttl; skopeo copies offline asking for no token"
    )
    func tokenRegistryOffline() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (layoutPath, layout) = try await imageLayout(in: directory)
        let token = "tg-pull-token-\(UUID().uuidString)"
        let registryPKI = try TestPKI(commonName: "Registry CA", host: "registry.test")
        let registry = try await LoopbackOrigin.start(tls: registryPKI.serverConfiguration) { request, respond in
            guard request.headerFields["Authorization"] == "Bearer \(token)" else {
                respond.send(
                    status: 401,
                    headers: ["WWW-Authenticate": #"Bearer realm="https://auth.test/token",service="registry.test""#, "Content-Type": "application/json"],
                    body: #"{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}"#
                )
                return
            }
            let path = request.path
            if path == "/v2/" {
                respond.send(status: 200, headers: ["Content-Type": "application/json", "Docker-Distribution-Api-Version": "registry/2.0"], body: "{}")
            } else if path.hasPrefix("/v2/tg/hello/manifests/") {
                let reference = String(path.dropFirst("/v2/tg/hello/manifests/".count))
                let digest = reference == "1" ? layout.index : reference
                guard let bytes = try? Data(contentsOf: URL(fileURLWithPath: "\(layoutPath)/blobs/sha256/\(digest.dropFirst(7))")) else {
                    respond.send(status: 404, body: #"{"errors":[{"code":"MANIFEST_UNKNOWN"}]}"#)
                    return
                }
                let type = digest == layout.index ? "application/vnd.oci.image.index.v1+json" : "application/vnd.oci.image.manifest.v1+json"
                respond.send(status: 200, headers: ["Content-Type": type, "Docker-Content-Digest": digest], bytes: Array(bytes))
            } else if path.hasPrefix("/v2/tg/hello/blobs/sha256:") {
                // Docker Hub's answer: a redirect to signed storage, with no freshness of its own.
                let hex = path.dropFirst("/v2/tg/hello/blobs/sha256:".count)
                respond.send(status: 307, headers: ["Location": "https://cdn.test/blobs/\(hex)?sig=\(UUID().uuidString)"])
            } else {
                respond.send(status: 404)
            }
        }
        defer { registry.stop() }
        let authPKI = try TestPKI(commonName: "Auth CA", host: "auth.test")
        // A private repository: the token service hands a pull token only to a login (Docker Hub
        // answers a request without one with an anonymous token that the registry then refuses).
        let login = "Basic " + Data("ci:registry-secret".utf8).base64EncodedString()
        let auth = try await LoopbackOrigin.start(tls: authPKI.serverConfiguration) { request, respond in
            guard request.headerFields["Authorization"] == login else {
                respond.send(status: 200, headers: ["Content-Type": "application/json"], body: #"{"token":"anonymous"}"#)
                return
            }
            guard request.path == "/token", request.target.contains("service=registry.test"),
                request.target.contains("scope=repository%3Atg%2Fhello%3Apull")
            else {
                respond.send(status: 400, body: "unexpected token request \(request.target)")
                return
            }
            respond.send(status: 200, headers: ["Content-Type": "application/json"], body: #"{"token":""# + token + #"","expires_in":300}"#)
        }
        defer { auth.stop() }
        let cdnPKI = try TestPKI(commonName: "CDN CA", host: "cdn.test")
        let cdn = try await LoopbackOrigin.start(tls: cdnPKI.serverConfiguration) { request, respond in
            let hex = request.path.dropFirst("/blobs/".count)
            guard let bytes = try? Data(contentsOf: URL(fileURLWithPath: "\(layoutPath)/blobs/sha256/\(hex)")) else {
                respond.send(status: 404)
                return
            }
            respond.send(status: 200, headers: ["Cache-Control": "public, max-age=14400", "Content-Type": "application/octet-stream"], bytes: Array(bytes))
        }
        defer { cdn.stop() }
        let passwordFile = directory.appendingPathComponent("registry.password")
        try "registry-secret\n".write(to: passwordFile, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: passwordFile.path)
        let authLogin = ["credentials: [{ user: ci, password-file: \"\(passwordFile.path)\" }]"]
        let (config, caFile) = try await interceptingConfiguration(
            directory: directory,
            registries: [("registry.test", registryPKI, registry.port), ("auth.test", authPKI, auth.port), ("cdn.test", cdnPKI, cdn.port)],
            hostSettings: ["registry.test": ["cache: { force-ttl: 1h }"], "auth.test": authLogin], cacheSettings: ["kind: private"]
        )
        let dockerfile = directory.appendingPathComponent("Dockerfile")
        try "FROM registry.test/tg/hello:1\n".write(to: dockerfile, atomically: true, encoding: .utf8)

        // A shared cache may not store answers to a request with a token: the warm says what to change.
        let (shared, _) = try await interceptingConfiguration(
            directory: directory,
            registries: [("registry.test", registryPKI, registry.port), ("auth.test", authPKI, auth.port), ("cdn.test", cdnPKI, cdn.port)],
            cache: "shared", hostSettings: ["auth.test": authLogin]
        )
        let refused = try await ChildProcess.run(
            try #require(tollgateBinary), ["warm", "--config", shared.path, dockerfile.path],
            environment: ["XDG_DATA_HOME": directory.appendingPathComponent("data").path]
        )
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("registry.test: a shared cache may not store a registry's answers to a token"), "\(refused.stderr)")
        #expect(refused.stdout.contains("not stored"), "\(refused.stdout)")
        let tokensAsked = auth.requestCount

        let served = try await serveOfflineAfterWarming(lockfile: dockerfile, config: config, directory: directory, origins: [registry, auth, cdn])
        defer { served.child.kill() }
        #expect(auth.requestCount - tokensAsked == 1, "one pull token for the one repository")
        let pulled = try await pull("registry.test/tg/hello:1", port: try served.port("forward"), caFile: caFile, directory: directory)
        let (misses, gets) = try await stopOffline(served, directory: directory)
        #expect(pulled.status == 0, "skopeo copy offline: \(pulled.stdout) \(pulled.stderr)")
        #expect(misses == "[]", "\(misses)")
        let copied = try Data(contentsOf: directory.appendingPathComponent("pulled").appendingPathComponent(String(layout.amd64.layer.dropFirst(7))))
        #expect(copied == (try blob(layout.amd64.layer, in: layoutPath)))
        // No token asked offline: the version check the warm stored is a 200. The blobs' 307s and the storage's 200s.
        #expect(!gets.contains { $0.contains("auth.test") }, "\(gets)")
        #expect(gets.filter { $0.contains("\"status\":307") }.count == 2 && gets.filter { $0.contains("cdn.test") }.count == 2, "\(gets)")
        #expect(gets.allSatisfy { $0.contains("\"cache\":\"hit\"") || $0.contains("\"cache\":\"stale\"") }, "\(gets)")
        // The token is a secret: it is in no file of the cache.
        let grep = try await ChildProcess.run("/bin/grep", ["-rqF", token, directory.appendingPathComponent("cache").path])
        #expect(grep.status == 1, "the pull token is in the cache")
    }
}
