import Foundation
import TollgateHTTP

/// pipenv's `Pipfile.lock` (JSON, `_meta.pipfile-spec`): the `default` and `develop` packages
/// pinned `==VERSION` with their files' `hashes`, each on the `index` its entry names (one of
/// `_meta.sources`, else the first). pipenv installs with pip, which reads the package's simple
/// page on that index (and the other sources', as extra indexes) and takes the files the hashes
/// pin: those pages are warmed and read as a `requirements.txt`'s are. A `file` entry with a URL is
/// that file; `git`, `path` and editable entries have no index to read and are left out.
extension PackageLockfile {
    /// Whether `text` is a Pipfile.lock: a JSON object whose `_meta` has a `pipfile-spec`.
    static func isPipfileLock(_ text: String) -> Bool {
        guard text.contains("\"pipfile-spec\""),
            let root = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
            let meta = root["_meta"] as? [String: Any]
        else { return false }
        return meta["pipfile-spec"] != nil
    }

    static func readPipfileLock(_ text: String, source: String, problems: inout [String], _ add: Add) throws -> [PythonPackageIndex.Lookup] {
        guard let root = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            throw CommandFailure.user("\(source): not a JSON object")
        }
        let meta = root["_meta"] as? [String: Any] ?? [:]
        // The sources in order, by name; the first is the default index.
        var sources: [(name: String, url: String)] = []
        for entry in meta["sources"] as? [[String: Any]] ?? [] {
            guard let url = entry["url"] as? String else { continue }
            sources.append((entry["name"] as? String ?? url, url))
        }
        if sources.isEmpty { sources = [("pypi", pypiSimpleIndex)] }
        var lookups: [PythonPackageIndex.Lookup] = []
        for section in ["default", "develop"] {
            let packages = root[section] as? [String: Any] ?? [:]
            for name in packages.keys.sorted() {
                guard let entry = packages[name] as? [String: Any] else { continue }
                let hashes = entry["hashes"] as? [String] ?? []
                if let file = entry["file"] as? String {
                    add(name, file, hashes.first.flatMap(hexDigest), hashes.first)
                    continue
                }
                if entry["git"] != nil || entry["path"] != nil || entry["editable"] as? Bool == true { continue }
                guard let pinned = entry["version"] as? String, pinned.hasPrefix("==") else {
                    problems.append("\(source): \(section).\(name) pins no version (==VERSION): not warmed")
                    continue
                }
                let requirement = "\(name)\(pinned)"
                guard !hashes.isEmpty else {
                    problems.append("\(source): \(requirement) has no hashes: which of its files pipenv takes is not pinned; not warmed")
                    continue
                }
                // Its index first, then the other sources pip is also given.
                let named = (entry["index"] as? String).flatMap { index in sources.first { $0.name == index } } ?? sources[0]
                let lookup = hashedLookup(
                    requirement: requirement, name: name, indexes: [named] + sources.filter { $0.name != named.name }, hashes: hashes,
                    source: source, problems: &problems
                )
                if let lookup { lookups.append(lookup) }
            }
        }
        return lookups
    }
}
