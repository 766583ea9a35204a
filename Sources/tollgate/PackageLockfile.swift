import Foundation
import TollgateCache
import TollgateHTTP

/// The artifacts a package manager's lockfile pins, with the digest each must have, for
/// `tollgate warm` to fetch and check:
///
/// - **npm** (`package-lock.json`, `npm-shrinkwrap.json`; lockfile versions 1 to 3, a JSON object
///   with `lockfileVersion`): each package's `resolved` tarball and its `integrity` (SRI).
/// - **Yarn classic** (`yarn.lock`, `# yarn lockfile v1`): each entry's `resolved` URL (its
///   `#SHA1` fragment left out of the URL) and `integrity`, else the fragment's SHA-1.
/// - **Cargo** (`Cargo.lock`, `[[package]]` tables): each crates.io package's file of the sparse
///   index (and the index's `config.json`), unchecked, and its crate as cargo downloads it,
///   `https://static.crates.io/crates/NAME/VERSION/download`, with its `checksum` (SHA-256).
///
/// pnpm's is read in `PackageLockfile+PNPM`, Python's (uv, pip's requirements with hashes,
/// poetry) in `PackageLockfile+Python` and pipenv's `Pipfile.lock` in `PackageLockfile+Pipenv`,
/// Go's `go.sum` in `PackageLockfile+Go`, Bundler's `Gemfile.lock` in `PackageLockfile+Bundler`,
/// Composer's `composer.lock` in `PackageLockfile+Composer`.
///
/// Packages from git, local paths, links or other registries have no such URL and are left out; a
/// URL listed several times is listed once.
struct PackageLockfile {
    /// One artifact and what its bytes must hash to.
    struct Artifact {
        var url: HTTPURL
        /// Nil when the lockfile gives none (an old entry, an index file): only fetched, not checked.
        var integrity: ArtifactDigest?
        /// The package (and version, where the lockfile gives it) the file is of: a release's
        /// files are chosen together for a ``PythonTarget``.
        var release: String? = nil
    }

    /// The lockfile formats read.
    enum Format: String {
        case npm, yarn, pnpm, cargo, uv, pip, poetry, pipenv, go, bundler, composer
    }

    let format: Format
    let artifacts: [Artifact]
    /// Index pages to warm and read for the URLs of pinned files (pip, poetry); their artifacts
    /// are known once the pages are (``PythonPackageIndex``).
    let lookups: [PythonPackageIndex.Lookup]

    /// The format of `text`, or nil when it is none of them (a list of URLs).
    static func format(of text: String) -> Format? {
        let start = text.drop(while: \.isWhitespace)
        if start.first == "{", isPipfileLock(text) { return .pipenv }
        if start.first == "{", isComposerLock(text) { return .composer }
        if start.first == "{", text.contains("\"lockfileVersion\""),
            (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])?["lockfileVersion"] != nil
        {
            return .npm
        }
        if text.contains("# yarn lockfile v1") { return .yarn }
        if isPNPMLock(text) { return .pnpm }
        if text.contains("[[package]]") {
            if text.contains("\nwheels = [") || text.contains("\nsdist = {") { return .uv }
            if text.contains("[metadata]"), text.contains("content-hash") { return .poetry }
            if text.contains("\nname = \"") { return .cargo }
        }
        if text.contains("--hash=sha") { return .pip }
        if isGoSum(text) { return .go }
        if isGemfileLock(text) { return .bundler }
        return nil
    }

    /// Reads the artifacts of a lockfile of `format`; `problems` gets a line for each entry that
    /// cannot be used (`SOURCE: NAME: …`), the rest are read.
    init(text: String, format: Format, source: String, problems: inout [String]) throws {
        self.format = format
        var found: [Artifact] = []
        var seen: Set<String> = []
        func add(_ name: String, resolved: String, integrity: SubresourceIntegrity?, integrityText: String?) {
            guard resolved.hasPrefix("http://") || resolved.hasPrefix("https://") else { return }
            guard let url = HTTPURL(string: resolved) else {
                problems.append("\(source): \(name): not a URL: '\(resolved)'")
                return
            }
            if let integrityText, integrity == nil {
                problems.append("\(source): \(name): integrity '\(integrityText)' names no sha1, sha256, sha384 or sha512 digest; fetched unchecked")
            }
            guard seen.insert(url.absoluteString).inserted else { return }
            found.append(Artifact(url: url, integrity: integrity.map(ArtifactDigest.integrity), release: name))
        }
        var lookups: [PythonPackageIndex.Lookup] = []
        switch format {
        case .npm:
            try Self.readNPM(text, source: source, add)
        case .yarn:
            Self.readYarn(text, add)
        case .pnpm:
            try Self.readPNPM(text, source: source, registry: Self.npmRegistry(), add)
        case .cargo:
            Self.readCargo(text, add)
        case .uv:
            Self.readUV(text, add)
        case .pip:
            var found: [String] = []
            lookups = Self.readRequirements(text, source: source, problems: &found, add)
            problems += found
        case .poetry:
            lookups = Self.readPoetry(text, source: source, problems: &problems)
        case .pipenv:
            var found: [String] = []
            lookups = try Self.readPipfileLock(text, source: source, problems: &found, add)
            problems += found
        case .bundler:
            Self.readGemfileLock(text, add)
        case .composer:
            try Self.readComposerLock(text, source: source, add)
        case .go:
            Self.readGoSum(text, proxy: Self.goModuleProxy()) { name, resolved, digest in
                guard let url = HTTPURL(string: resolved) else {
                    problems.append("\(source): \(name): not a URL: '\(resolved)'")
                    return
                }
                if seen.insert(url.absoluteString).inserted { found.append(Artifact(url: url, integrity: digest)) }
            }
        }
        artifacts = found
        self.lookups = lookups
    }

    /// Whether the format pins Python files, which a ``PythonTarget`` chooses among.
    var isPython: Bool { [.uv, .pip, .poetry, .pipenv].contains(format) }

    /// `artifacts` with each release's files narrowed to those `target` takes
    /// (``PythonTarget/select(_:filename:)``), in their order.
    static func selecting(_ artifacts: [Artifact], for target: PythonTarget) -> [Artifact] {
        var byRelease: [String: [Artifact]] = [:]
        var order: [String] = []
        for artifact in artifacts {
            let release = artifact.release ?? artifact.url.absoluteString
            if byRelease[release] == nil { order.append(release) }
            byRelease[release, default: []].append(artifact)
        }
        let kept = Set(order.flatMap { target.select(byRelease[$0]!, filename: { PythonTarget.filename(ofURLPath: $0.url.path) }) }.map(\.url.absoluteString))
        return artifacts.filter { kept.contains($0.url.absoluteString) }
    }

    typealias Add = (_ name: String, _ resolved: String, _ integrity: SubresourceIntegrity?, _ integrityText: String?) -> Void

    private static func readNPM(_ text: String, source: String, _ add: Add) throws {
        guard let root = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            throw CommandFailure.user("\(source): not a JSON object")
        }
        func entry(_ name: String, _ entry: [String: Any]) {
            guard let resolved = entry["resolved"] as? String else { return }
            let text = entry["integrity"] as? String
            add(name, resolved, text.flatMap(SubresourceIntegrity.init), text)
        }
        if let packages = root["packages"] as? [String: Any] {
            // Versions 2 and 3: one flat map by install path ("" is the project itself).
            for path in packages.keys.sorted() where !path.isEmpty {
                if let value = packages[path] as? [String: Any] { entry(path, value) }
            }
        } else if let dependencies = root["dependencies"] as? [String: Any] {
            // Version 1: nested dependencies.
            func walk(_ dependencies: [String: Any], under prefix: String) {
                for name in dependencies.keys.sorted() {
                    guard let value = dependencies[name] as? [String: Any] else { continue }
                    entry(prefix + name, value)
                    if let nested = value["dependencies"] as? [String: Any] { walk(nested, under: prefix + name + "/") }
                }
            }
            walk(dependencies, under: "")
        }
    }

    /// Yarn classic: an entry is a line at column 0 ending with `:`, its fields the indented lines
    /// after it (`resolved "URL#SHA1"`, `integrity sha512-…`).
    private static func readYarn(_ text: String, _ add: Add) {
        var name = ""
        var resolved: String?
        var integrity: String?
        func flush() {
            guard let resolved else { return }
            var url = resolved
            var fragmentSHA1: SubresourceIntegrity?
            if let hash = url.firstIndex(of: "#") {
                fragmentSHA1 = SubresourceIntegrity(algorithm: .sha1, hex: String(url[url.index(after: hash)...]))
                url = String(url[..<hash])
            }
            add(name, url, integrity.flatMap(SubresourceIntegrity.init) ?? fragmentSHA1, integrity)
        }
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = String(raw)
            if line.hasPrefix("#") || line.trimmingCharacters(in: .whitespaces).isEmpty { continue }
            if !line.hasPrefix(" ") {
                flush()
                name = line.hasSuffix(":") ? String(line.dropLast()) : line
                resolved = nil
                integrity = nil
                continue
            }
            let field = line.trimmingCharacters(in: .whitespaces)
            if field.hasPrefix("resolved ") {
                resolved = Self.unquoted(field.dropFirst("resolved ".count))
            } else if field.hasPrefix("integrity ") {
                integrity = Self.unquoted(field.dropFirst("integrity ".count))
            }
        }
        flush()
    }

    /// Cargo: `[[package]]` tables of `key = "value"` lines; crates.io's only. Cargo (1.70 and
    /// later: the sparse protocol) reads each package's file of the index and the index's
    /// `config.json` before it downloads anything, even with a lockfile, so those are warmed too
    /// (no digest: the index grows as versions are published); then each crate from the
    /// `config.json`'s `dl` as cargo forms the URL when `dl` has no markers:
    /// `https://static.crates.io/crates/NAME/VERSION/download`.
    private static func readCargo(_ text: String, _ add: Add) {
        var fields: [String: String] = [:]
        var indexed = false
        func flush() {
            defer { fields = [:] }
            guard let name = fields["name"], let version = fields["version"], let source = fields["source"],
                source == "registry+https://github.com/rust-lang/crates.io-index" || source == "sparse+https://index.crates.io/"
            else { return }
            if !indexed {
                indexed = true
                add("crates.io index", "https://index.crates.io/config.json", nil, nil)
            }
            add("\(name) (index)", "https://index.crates.io/\(cargoIndexPath(name))", nil, nil)
            let checksum = fields["checksum"]
            add(
                "\(name) \(version)", "https://static.crates.io/crates/\(name)/\(version)/download",
                checksum.flatMap { SubresourceIntegrity(algorithm: .sha256, hex: $0) }, checksum
            )
        }
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("[") {
                flush()
                continue
            }
            guard let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces)
            fields[key] = Self.unquoted(line[line.index(after: equals)...])
        }
        flush()
    }

    /// Where a package's file is in a Cargo registry index: by the lowercased name's length,
    /// `1/NAME`, `2/NAME`, `3/N/NAME` (its first character), else `NA/ME/NAME` (its first two
    /// characters, then the next two).
    static func cargoIndexPath(_ name: String) -> String {
        let lower = name.lowercased()
        let characters = Array(lower)
        switch characters.count {
        case 1, 2: return "\(characters.count)/\(lower)"
        case 3: return "3/\(characters[0])/\(lower)"
        default: return "\(String(characters[0..<2]))/\(String(characters[2..<4]))/\(lower)"
        }
    }

    /// `"text"` without its quotes (and surrounding spaces); text without quotes as it is.
    private static func unquoted<Text: StringProtocol>(_ text: Text) -> String {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard trimmed.count >= 2, trimmed.hasPrefix("\""), trimmed.hasSuffix("\"") else { return trimmed }
        return String(trimmed.dropFirst().dropLast())
    }
}

/// A Subresource Integrity value (`sha512-BASE64 sha1-BASE64`, as npm writes `integrity`): the
/// digests of the strongest algorithm it names; the bytes match when their digest is one of them
/// (W3C SRI §3.3.5: weaker algorithms are not consulted).
struct SubresourceIntegrity: CustomStringConvertible {
    let algorithm: MessageDigest.Algorithm
    let name: String
    let digests: [[UInt8]]

    /// Nil when no token names a known algorithm with a well-formed digest.
    init?(_ text: String) {
        let known: [(String, MessageDigest.Algorithm)] = [("sha512", .sha512), ("sha384", .sha384), ("sha256", .sha256), ("sha1", .sha1)]
        var byAlgorithm: [String: [[UInt8]]] = [:]
        for token in text.split(whereSeparator: \.isWhitespace) {
            guard let dash = token.firstIndex(of: "-") else { continue }
            let name = String(token[..<dash])
            // An option (`?foo`) may follow the digest.
            let encoded = token[token.index(after: dash)...].split(separator: "?").first.map(String.init) ?? ""
            guard let algorithm = known.first(where: { $0.0 == name })?.1, let data = Data(base64Encoded: encoded),
                data.count == algorithm.digestCount
            else { continue }
            byAlgorithm[name, default: []].append([UInt8](data))
        }
        guard let (name, algorithm) = known.first(where: { byAlgorithm[$0.0] != nil }) else { return nil }
        self.algorithm = algorithm
        self.name = name
        self.digests = byAlgorithm[name]!
    }

    /// One digest given in hexadecimal (yarn's `#SHA1` fragment, Cargo's `checksum`); nil when it
    /// is not one of `algorithm`'s length.
    init?(algorithm: MessageDigest.Algorithm, hex: String) {
        let characters = Array(hex.lowercased().utf8)
        guard characters.count == algorithm.digestCount * 2 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: characters.count, by: 2) {
            guard let byte = UInt8(String(decoding: characters[index..<index + 2], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
        }
        self.algorithm = algorithm
        self.name = switch algorithm {
        case .sha1: "sha1"
        case .sha256: "sha256"
        case .sha384: "sha384"
        case .sha512: "sha512"
        case .md5: "md5"
        }
        self.digests = [bytes]
    }

    /// Whether `digest` (of ``algorithm``) is one of the listed ones.
    func matches(_ digest: [UInt8]) -> Bool { digests.contains(digest) }

    /// `sha512-BASE64` of `digest`.
    func format(_ digest: [UInt8]) -> String { name + "-" + Data(digest).base64EncodedString() }

    var description: String { digests.map(format).joined(separator: " ") }
}
