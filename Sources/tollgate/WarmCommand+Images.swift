import Foundation
import TollgateCache
import TollgateHTTP
import TollgatePolicy
import TollgateSession

/// `warm` of a Dockerfile or a Compose file: each image it names is fetched from its registry as a client
/// pulling it asks for it — the registry's version check, the manifest by tag (and by digest), the
/// platform's manifest, the config and every layer — so that `docker`, `podman` or `skopeo`
/// pull it offline from the cache. Every manifest and blob is checked against its digest.
extension WarmCommand {
    /// Warms `uses` for `platform` (where a `FROM --platform=` names none); `finished` is called
    /// as each URL is done.
    func warmImages(
        _ uses: [DockerfileImages.Use], warmer: URLWarmer, platform: ImagePlatform, source: String,
        finished: @escaping @Sendable () -> Void
    ) async -> ImageWarm {
        var run = ImageWarm(warmer: warmer, source: source, finished: finished)
        var registries: [String] = []
        for use in uses where !registries.contains(use.reference.apiHost) { registries.append(use.reference.apiHost) }
        var blobs: [HTTPURL] = []
        var blobHeaders: [String: HeaderFields] = [:]
        for host in registries {
            let images = uses.filter { $0.reference.apiHost == host }
            guard let authorizations = await run.signIn(images[0].reference, repositories: images.map(\.reference.repository)) else { continue }
            for use in images {
                guard let authorization = authorizations[use.reference.repository] else { continue }
                for blob in await run.warmManifests(of: use, platform: use.platform ?? platform, authorization: authorization)
                where blobHeaders.updateValue(authorization, forKey: blob.absoluteString) == nil && !run.seen.contains(blob.absoluteString) {
                    blobs.append(blob)
                }
            }
        }
        var blobWarmer = warmer
        blobWarmer.requestHeaders = blobHeaders
        run.urls += blobs
        run.outcomes += await blobWarmer.warm(blobs, concurrency: concurrency, finished: finished)
        return run
    }
}

/// One warm of images: what was fetched, in order, and what must be checked.
struct ImageWarm {
    let warmer: URLWarmer
    let source: String
    let finished: @Sendable () -> Void
    /// Every URL warmed, in order, and what became of each.
    var urls: [HTTPURL] = []
    var outcomes: [URLWarmer.Outcome] = []
    /// The SHA-256 each digest-addressed body must have, by URL.
    var integrity: [String: ArtifactDigest] = [:]
    /// A line for each image (or registry) that could not be warmed, and why.
    var problems: [String] = []
    /// The URLs warmed so far.
    var seen: Set<String> = []
    /// The manifests read so far, by URL (two images may share one: a tag and a digest of it).
    private var manifests: [String: (body: Data, digest: String)] = [:]

    init(warmer: URLWarmer, source: String, finished: @escaping @Sendable () -> Void) {
        self.warmer = warmer
        self.source = source
        self.finished = finished
    }

    /// Warms `url` with `headers` (its body kept when `keepBody`), and records it unless `record` is false.
    mutating func fetch(_ url: HTTPURL, headers: HeaderFields, keepBody: Bool = false, record: Bool = true) async -> URLWarmer.Outcome {
        var one = warmer
        one.requestHeaders = [url.absoluteString: headers]
        if keepBody { one.keptBodies = [url.absoluteString] }
        let outcome = await one.warm(url)
        if record { self.record(url, outcome) }
        return outcome
    }

    private mutating func record(_ url: HTTPURL, _ outcome: URLWarmer.Outcome) {
        seen.insert(url.absoluteString)
        urls.append(url)
        outcomes.append(outcome)
        finished()
    }

    /// Warms the version check `https://HOST/v2/` of `registry` (any image's reference on it) as
    /// a client asks it first. A registry
    /// that answers 401 with a bearer challenge gets a pull token asked for each repository, and
    /// the check is asked again with one: stored, that 200 is what an offline client's check
    /// finds, and such a client then asks for no token at all. Returns the `Authorization` for
    /// each repository (empty fields for an open registry); nil when none can be pulled.
    mutating func signIn(_ registry: ImageReference, repositories: [String]) async -> [String: HeaderFields]? {
        let host = registry.apiHost
        guard let ping = registry.pingURL else { return nil }
        let first = await fetch(ping, headers: [:], record: false)
        var result: [String: HeaderFields] = [:]
        guard first.status == 401, let challenge = Self.bearerChallenge(first.responseHeaders) else {
            record(ping, first)
            guard first.kind == .stored || first.kind == .fresh else {
                let why = first.status == 401
                    ? "its version check \(ping) answered 401 without a bearer challenge: give its host rule credentials"
                    : "its version check \(ping) was not stored (\(first.error ?? first.cacheStatus ?? first.kind.rawValue))"
                problems.append("\(source): \(host): \(why); its images are not warmed")
                return nil
            }
            for repository in repositories { result[repository] = HeaderFields() }
            return result
        }
        for repository in Set(repositories).sorted() {
            switch await token(challenge, scope: "repository:\(repository):pull") {
            case .success(let token):
                var fields = HeaderFields()
                fields.add(name: "Authorization", value: "Bearer \(token)")
                result[repository] = fields
            case .failure(let why):
                problems.append("\(source): \(host)/\(repository): \(why); not warmed")
            }
        }
        guard let any = result.values.first else { return nil }
        let again = await fetch(ping, headers: any)
        if again.kind != .stored, again.kind != .fresh {
            let why = again.cacheStatus?.contains("authorization") == true
                ? "a shared cache may not store a registry's answers to a token (RFC 9111 §3.5): warm it with cache.kind: private"
                : "its version check was not stored (\(again.error ?? again.cacheStatus ?? again.kind.rawValue))"
            problems.append("\(source): \(host): \(why)")
        }
        return result
    }

    /// Warms `use`'s manifests — by tag and by digest, and the index's entry for `platform` — and
    /// returns the URLs of its config and layers, each with its digest in ``integrity``.
    mutating func warmManifests(of use: DockerfileImages.Use, platform: ImagePlatform, authorization: HeaderFields) async -> [HTTPURL] {
        let image = use.reference
        guard let top = await manifest(of: image, image.digest ?? image.tag ?? "latest", digest: image.digest, authorization: authorization) else {
            return []
        }
        if image.digest == nil {
            // containerd resolves a tag to its digest, then asks for the manifest by digest.
            _ = await manifest(of: image, top.digest, digest: top.digest, authorization: authorization)
        }
        var chosen = top
        do throws(ImageManifest.ReadError) {
            if case .index(let entries) = try ImageManifest(json: top.body) {
                guard let entry = entries.first(where: { $0.platform.map(platform.accepts) ?? false }) else {
                    let offered = entries.compactMap { $0.platform?.description }.joined(separator: ", ")
                    problems.append("\(source): \(image): no manifest for \(platform) in its index (it has: \(offered)); not warmed")
                    return []
                }
                guard let manifest = await manifest(of: image, entry.digest, digest: entry.digest, authorization: authorization) else { return [] }
                chosen = manifest
            }
            guard case .image(let config, let layers) = try ImageManifest(json: chosen.body) else {
                problems.append("\(source): \(image): its index names another index; not warmed")
                return []
            }
            var blobs: [HTTPURL] = []
            for digest in [config] + layers {
                guard let url = image.blobURL(digest) else { continue }
                integrity[url.absoluteString] = Self.sha256Integrity(digest)
                blobs.append(url)
            }
            standardError("\(source): \(image): \(platform) \(chosen.digest), \(layers.count) layer\(layers.count == 1 ? "" : "s")")
            return blobs
        } catch {
            problems.append("\(source): \(image): \(error.description); not warmed")
            return []
        }
    }

    /// A manifest's body and digest, checked against `digest` when one is given; nil (with a
    /// problem) when it is not in the cache. A body that differs is removed when the digests are
    /// checked, and nothing it names is fetched.
    private mutating func manifest(
        of image: ImageReference, _ reference: String, digest: String?, authorization: HeaderFields
    ) async -> (body: Data, digest: String)? {
        guard let url = image.manifestURL(reference) else { return nil }
        if let known = manifests[url.absoluteString] { return known }
        if seen.contains(url.absoluteString) { return nil }  // warmed, and not a manifest to read
        if let digest { integrity[url.absoluteString] = Self.sha256Integrity(digest) }
        var headers = authorization
        headers.add(name: "Accept", value: ImageManifest.acceptedTypes.joined(separator: ", "))
        let outcome = await fetch(url, headers: headers, keepBody: true)
        guard outcome.kind == .stored || outcome.kind == .fresh, let body = outcome.body else {
            problems.append("\(source): \(image): the manifest \(url) is not in the cache; not warmed")
            return nil
        }
        let actual = "sha256:" + SHA256.hex(SHA256.hash(body))
        if let digest, actual != digest { return nil }
        manifests[url.absoluteString] = (body, actual)
        return (body, actual)
    }

    /// `sha256:HEX` as the digest a body is checked against.
    private static func sha256Integrity(_ digest: String) -> ArtifactDigest? {
        SubresourceIntegrity(algorithm: .sha256, hex: String(digest.dropFirst("sha256:".count))).map(ArtifactDigest.integrity)
    }

    /// The `Bearer` challenge of a registry's 401 (its `realm` is where tokens are asked for).
    private static func bearerChallenge(_ fields: HeaderFields?) -> ParsedChallenge? {
        let challenges = AuthenticationHeader.challenges(in: fields?.values(for: "WWW-Authenticate") ?? [])
        return challenges.first { $0.schemeName == "bearer" && $0.realm != nil }
    }

    /// Why no token was had.
    struct TokenFailure: Error, CustomStringConvertible {
        let description: String
    }

    /// A pull token for `scope` from the challenge's realm (the registry's token service: Docker's
    /// token authentication), asked with `Cache-Control: no-store` so that it is never kept in the
    /// cache. Anonymous, unless the realm's host rule has `credentials`: then the first whose
    /// password can be read goes with the request as Basic from the start, as `docker login`'s
    /// do — a token service answers a request without them with an anonymous token, not a 401,
    /// so a credential sent only when challenged would never be sent.
    private mutating func token(_ challenge: ParsedChallenge, scope: String) async -> Result<String, TokenFailure> {
        guard let realm = challenge.realm, let base = HTTPURL(string: realm) else {
            return .failure(TokenFailure(description: "the registry's token realm '\(challenge.realm ?? "")' is not a URL"))
        }
        var query = base.query.map { $0 + "&" } ?? ""
        if let service = challenge.parameters["service"] { query += "service=\(Self.formEncoded(service))&" }
        query += "scope=\(Self.formEncoded(scope))"
        guard let url = HTTPURL(string: "\(base.origin)\(base.path)?\(query)") else {
            return .failure(TokenFailure(description: "cannot form a token URL from \(realm)"))
        }
        var headers: HeaderFields = ["Cache-Control": "no-store"]
        if let login = Self.login(for: url, runtime: warmer.runtime) { headers.add(name: "Authorization", value: login) }
        let outcome = await fetch(url, headers: headers, keepBody: true, record: false)
        guard outcome.status == 200, let body = outcome.body,
            let object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any],
            let token = (object["token"] as? String) ?? (object["access_token"] as? String), !token.isEmpty
        else {
            let why = outcome.error ?? outcome.status.map { "status \($0)" } ?? "no answer"
            return .failure(TokenFailure(description: "no pull token from \(base.origin)\(base.path) (\(why))"))
        }
        return .success(token)
    }

    /// `Basic BASE64(user:password)` from the first credential of `url`'s host rule whose password
    /// can be read; nil when it has none.
    private static func login(for url: HTTPURL, runtime: PolicyRuntime) -> String? {
        let rule = runtime.decisions.matcher.firstMatch(host: url.host, port: url.effectivePort)?.rule
        for credential in rule?.credentials ?? [] {
            guard let password = credential.password.readPassword() else { continue }
            return "Basic " + Data("\(credential.user):\(password)".utf8).base64EncodedString()
        }
        return nil
    }

    /// `text` percent-encoded for a query value (`repository:a/b:pull` → `repository%3Aa%2Fb%3Apull`).
    private static func formEncoded(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }
}
