import Foundation
import TollgateCache
import TollgateHTTP

/// The artifacts an npm lockfile (`package-lock.json`, `npm-shrinkwrap.json`; lockfile versions 1
/// to 3) pins: each package's `resolved` tarball URL and its `integrity` (Subresource Integrity),
/// for `tollgate warm` to fetch and check. Packages from git, local paths and links have no http(s)
/// `resolved` and are left out; a tarball listed under several paths is listed once.
struct NPMLockfile {
    /// One tarball and what its bytes must hash to.
    struct Artifact {
        var url: HTTPURL
        /// Nil when the lockfile gives none (an old entry): only fetched, not checked.
        var integrity: SubresourceIntegrity?
    }

    let artifacts: [Artifact]

    /// Whether `text` is an npm lockfile: a JSON object with `lockfileVersion`.
    static func recognizes(_ text: String) -> Bool {
        guard text.drop(while: \.isWhitespace).first == "{", text.contains("\"lockfileVersion\"") else { return false }
        return (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])?["lockfileVersion"] != nil
    }

    /// Reads the artifacts; `problems` gets a line for each entry that cannot be used
    /// (`NAME: …`), the rest are read.
    init(text: String, source: String, problems: inout [String]) throws {
        guard let root = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            throw CommandFailure.user("\(source): not a JSON object")
        }
        var found: [Artifact] = []
        var seen: Set<String> = []
        func add(_ name: String, _ entry: [String: Any]) {
            guard let resolved = entry["resolved"] as? String, resolved.hasPrefix("http://") || resolved.hasPrefix("https://") else { return }
            guard let url = HTTPURL(string: resolved) else {
                problems.append("\(source): \(name): not a URL: '\(resolved)'")
                return
            }
            var integrity: SubresourceIntegrity?
            if let text = entry["integrity"] as? String {
                integrity = SubresourceIntegrity(text)
                if integrity == nil { problems.append("\(source): \(name): integrity '\(text)' names no sha1, sha256, sha384 or sha512 digest; fetched unchecked") }
            }
            guard seen.insert(url.absoluteString).inserted else { return }
            found.append(Artifact(url: url, integrity: integrity))
        }
        if let packages = root["packages"] as? [String: Any] {
            // Versions 2 and 3: one flat map by install path ("" is the project itself).
            for path in packages.keys.sorted() where !path.isEmpty {
                if let entry = packages[path] as? [String: Any] { add(path, entry) }
            }
        } else if let dependencies = root["dependencies"] as? [String: Any] {
            // Version 1: nested dependencies.
            func walk(_ dependencies: [String: Any], under prefix: String) {
                for name in dependencies.keys.sorted() {
                    guard let entry = dependencies[name] as? [String: Any] else { continue }
                    add(prefix + name, entry)
                    if let nested = entry["dependencies"] as? [String: Any] { walk(nested, under: prefix + name + "/") }
                }
            }
            walk(dependencies, under: "")
        }
        artifacts = found
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

    /// Whether `digest` (of ``algorithm``) is one of the listed ones.
    func matches(_ digest: [UInt8]) -> Bool { digests.contains(digest) }

    /// `sha512-BASE64` of `digest`.
    func format(_ digest: [UInt8]) -> String { name + "-" + Data(digest).base64EncodedString() }

    var description: String { digests.map(format).joined(separator: " ") }
}
