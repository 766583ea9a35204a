import Foundation
import TollgateCache
import TollgateHTTP

/// Python's lockfiles for `tollgate warm`:
///
/// - **uv** (`uv.lock`): each registry package's `sdist` and `wheels` with their URLs and `hash`es —
///   what `uv sync --frozen` downloads, nothing else.
/// - **pip** (`requirements.txt` with `--hash`, as `pip-compile --generate-hashes`, `uv pip compile
///   --generate-hashes` and `poetry export` write it): the index's page of each project (pip reads
///   it first, offline too), then every file whose SHA-256 a `--hash` pins; `NAME @ URL` lines as
///   they are. The index is `--index-url`/`-i` in the file, else PyPI's.
/// - **poetry** (`poetry.lock`): for packages from PyPI, the release's JSON
///   (`https://pypi.org/pypi/NAME/VERSION/json`, what `poetry install` reads for its files'
///   URLs), for packages from another index (`[package.source]` of type `legacy`) that index's
///   page; then each file the lock lists, by name, checked by its `hash`.
extension PackageLockfile {
    /// PyPI's simple index: pip's default.
    static let pypiSimpleIndex = "https://pypi.org/simple/"

    /// The value of `key = "…"` in `text` (a TOML line or inline table), or nil.
    static func quotedValue(_ key: String, in text: Substring) -> String? {
        var rest = text
        while let found = rest.range(of: key) {
            let before = found.lowerBound == rest.startIndex ? " " : rest[rest.index(before: found.lowerBound)]
            var after = rest[found.upperBound...].drop { $0 == " " }
            rest = rest[found.upperBound...]
            guard before == " " || before == "{" || before == ",", after.first == "=" else { continue }
            after = after.dropFirst().drop { $0 == " " }
            guard after.first == "\"" else { return nil }
            let value = after.dropFirst()
            return value.firstIndex(of: "\"").map { String(value[..<$0]) }
        }
        return nil
    }

    /// The `{ … }` inline tables of a TOML line (not nested, as lockfiles write them).
    static func inlineTables(in line: Substring) -> [Substring] {
        var tables: [Substring] = []
        var rest = line
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
            tables.append(rest[rest.index(after: open)..<close])
            rest = rest[rest.index(after: close)...]
        }
        return tables
    }

    /// A `sha256:HEX` digest (pip's `--hash`, uv's and poetry's `hash`), or nil.
    static func hexDigest(_ text: String) -> SubresourceIntegrity? {
        guard let colon = text.firstIndex(of: ":") else { return nil }
        let algorithm: MessageDigest.Algorithm
        switch text[..<colon].lowercased() {
        case "sha256": algorithm = .sha256
        case "sha384": algorithm = .sha384
        case "sha512": algorithm = .sha512
        default: return nil
        }
        return SubresourceIntegrity(algorithm: algorithm, hex: String(text[text.index(after: colon)...]))
    }

    /// uv: every inline table with a `url` and a `hash` (an `sdist`, one of the `wheels`) in a
    /// `[[package]]`, several on one line too; packages from git or a path have none.
    static func readUV(_ text: String, _ add: Add) {
        var package = ""
        var name = ""
        for raw in text.split(separator: "\n") {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("[[package]]") {
                name = ""
                package = ""
                continue
            }
            if line.hasPrefix("name = "), let value = quotedValue("name", in: Substring(line)) { name = value }
            if line.hasPrefix("version = "), let value = quotedValue("version", in: Substring(line)) { package = "\(name) \(value)" }
            for table in inlineTables(in: Substring(line)) {
                guard let url = quotedValue("url", in: table), let hash = quotedValue("hash", in: table) else { continue }
                add(package.isEmpty ? name : package, url, hexDigest(hash), hash)
            }
        }
    }

    /// pip: the logical lines (a line ending in `\` goes on in the next), comments removed.
    private static func requirementLines(_ text: String) -> [String] {
        var lines: [String] = []
        var current = ""
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var line = String(raw)
            // A comment starts at a # at the start or after whitespace (a URL's fragment stays).
            if let hash = line.indices.first(where: { line[$0] == "#" && ($0 == line.startIndex || line[line.index(before: $0)].isWhitespace) }) {
                line = String(line[..<hash])
            }
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasSuffix("\\") {
                current += trimmed.dropLast() + " "
                continue
            }
            current += trimmed
            if !current.trimmingCharacters(in: .whitespaces).isEmpty { lines.append(current.trimmingCharacters(in: .whitespaces)) }
            current = ""
        }
        if !current.isEmpty { lines.append(current) }
        return lines
    }

    /// pip's `requirements.txt` with hashes. The options apply to the whole file, wherever they
    /// are (as pip reads them): `--index-url`, and the places pip also looks for each project's
    /// files — each `--extra-index-url`'s simple page and each `--find-links` page.
    static func readRequirements(_ text: String, source: String, problems: inout [String], _ add: Add) -> [PythonPackageIndex.Lookup] {
        var index = pypiSimpleIndex
        var extraIndexes: [String] = []
        var linkPages: [HTTPURL] = []
        var requirements: [String] = []
        for line in requirementLines(text) {
            let tokens = line.split(whereSeparator: \.isWhitespace).map(String.init)
            guard let first = tokens.first else { continue }
            guard first.hasPrefix("-") else {
                requirements.append(line)
                continue
            }
            let option = first.split(separator: "=", maxSplits: 1).first.map(String.init) ?? first
            let value = first.contains("=") ? String(first.split(separator: "=", maxSplits: 1)[1]) : tokens.dropFirst().first
            switch option {
            case "-i", "--index-url":
                if let value { index = value }
            case "--extra-index-url":
                if let value { extraIndexes.append(value) }
            case "-f", "--find-links":
                if let value, value.hasPrefix("http://") || value.hasPrefix("https://"), let page = HTTPURL(string: value) {
                    linkPages.append(page)
                } else {
                    problems.append("\(source): '\(line)' is not followed: only http(s) pages of links are read")
                }
            case "-r", "--requirement", "-c", "--constraint", "-e", "--editable":
                problems.append("\(source): '\(line)' is not followed: only this file's requirements are warmed")
            case "--no-index":
                index = ""
            default:
                break  // --trusted-host, --prefer-binary, --require-hashes, …: nothing to fetch
            }
        }
        var lookups: [PythonPackageIndex.Lookup] = []
        for line in requirements {
            let tokens = line.split(whereSeparator: \.isWhitespace).map(String.init)
            let hashes = tokens.filter { $0.hasPrefix("--hash=") }.map { String($0.dropFirst("--hash=".count)) }
            let specification = line.components(separatedBy: " --").first!.components(separatedBy: ";").first!
                .trimmingCharacters(in: .whitespaces)
            if let at = specification.range(of: " @ ") {
                // A direct reference: the URL is the file.
                let url = specification[at.upperBound...].trimmingCharacters(in: .whitespaces)
                add(String(specification[..<at.lowerBound]), url, hashes.first.flatMap(hexDigest), hashes.first)
                continue
            }
            guard let equals = specification.range(of: "==") else {
                problems.append("\(source): '\(specification)' pins no version (NAME==VERSION): not warmed")
                continue
            }
            var name = String(specification[..<equals.lowerBound]).trimmingCharacters(in: .whitespaces)
            if let bracket = name.firstIndex(of: "[") { name = String(name[..<bracket]) }
            let version = specification[equals.upperBound...].trimmingCharacters(in: CharacterSet(charactersIn: "= "))
            let requirement = "\(name)==\(version)"
            guard !hashes.isEmpty else {
                problems.append("\(source): \(requirement) has no --hash: which of its files pip takes is not pinned; not warmed")
                continue
            }
            // The pages pip reads for the project, in its order: the index, the extra indexes,
            // the pages of links (`--no-index` leaves the links alone).
            let indexes = (index.isEmpty ? [] : [index]) + extraIndexes
            let lookup = hashedLookup(
                requirement: requirement, name: name, indexes: indexes.map { ($0, $0) }, linkPages: linkPages, hashes: hashes,
                source: source, problems: &problems
            )
            if let lookup { lookups.append(lookup) }
        }
        return lookups
    }

    /// The lookup of a release whose files are pinned by digest alone (pip's `--hash`, pipenv's
    /// `hashes`): the project's simple page on each of `indexes` (a name for problem lines, and
    /// the index's URL), then `linkPages`, the first the main one; nil when there is no page.
    static func hashedLookup(
        requirement: String, name: String, indexes: [(name: String, url: String)], linkPages: [HTTPURL] = [], hashes: [String],
        source: String, problems: inout [String]
    ) -> PythonPackageIndex.Lookup? {
        var pages: [HTTPURL] = []
        for index in indexes {
            guard let page = PythonPackageIndex.simplePage(index: index.url, name: name) else {
                let named = index.name == index.url ? "" : " (\(index.name))"
                problems.append("\(source): the index '\(index.url)'\(named) is not a URL")
                continue
            }
            pages.append(page)
        }
        pages += linkPages
        guard let page = pages.first else { return nil }
        var pins: [PythonPackageIndex.Pin] = []
        for hash in hashes {
            guard let integrity = hexDigest(hash) else {
                problems.append("\(source): \(requirement): '\(hash)' is not a sha256, sha384 or sha512 digest")
                continue
            }
            pins.append(PythonPackageIndex.Pin(filename: nil, integrity: integrity, text: hash))
        }
        return PythonPackageIndex.Lookup(page: page, kind: .simple, requirement: requirement, pins: pins, morePages: Array(pages.dropFirst()))
    }

    /// poetry: `[[package]]` tables with `files = [{file = …, hash = …}, …]` (lock versions 2)
    /// or, in older locks, `[metadata.files]` lists by name; `[package.source]` for another index.
    static func readPoetry(_ text: String, source: String, problems: inout [String]) -> [PythonPackageIndex.Lookup] {
        struct Package {
            var name = ""
            var version = ""
            var files: [(String, String)] = []
            var sourceType: String?
            var sourceURL: String?
        }
        var packages: [Package] = []
        var filesByName: [String: [(String, String)]] = [:]
        enum Section { case package, source, metadataFiles, other }
        var section = Section.other
        var listName: String?
        for raw in text.split(separator: "\n") {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("[") && !line.hasPrefix("[\"") {
                listName = nil
                if line == "[[package]]" {
                    packages.append(Package())
                    section = .package
                } else if line == "[package.source]" {
                    section = .source
                } else if line == "[metadata.files]" {
                    section = .metadataFiles
                } else {
                    section = .other
                }
                continue
            }
            let substring = Substring(line)
            var entries = substring
            if !line.hasPrefix("{"), let equals = line.firstIndex(of: "=") {
                // `key = value`; a list value (`files = [`) holds `{file = …, hash = …}` tables, on
                // the lines that follow or on this one.
                let key = line[..<equals].trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                entries = substring[line.index(after: equals)...]
                let opensList = entries.trimmingCharacters(in: .whitespaces).hasPrefix("[")
                switch section {
                case .package:
                    if key == "name" { packages[packages.count - 1].name = quotedValue("name", in: substring) ?? "" }
                    if key == "version" { packages[packages.count - 1].version = quotedValue("version", in: substring) ?? "" }
                    if key == "files", opensList { listName = "files" }
                case .source:
                    if key == "type" { packages[packages.count - 1].sourceType = quotedValue("type", in: substring) }
                    if key == "url" { packages[packages.count - 1].sourceURL = quotedValue("url", in: substring) }
                case .metadataFiles:
                    if opensList { listName = key }
                case .other:
                    break
                }
            }
            if let list = listName {
                for table in inlineTables(in: entries) {
                    guard let file = quotedValue("file", in: table), let hash = quotedValue("hash", in: table) else { continue }
                    if section == .package {
                        packages[packages.count - 1].files.append((file, hash))
                    } else if section == .metadataFiles {
                        filesByName[list, default: []].append((file, hash))
                    }
                }
            }
            if line.hasSuffix("]") { listName = nil }
        }
        var lookups: [PythonPackageIndex.Lookup] = []
        for package in packages where !package.name.isEmpty {
            let requirement = "\(package.name)==\(package.version)"
            let files = package.files.isEmpty ? filesByName[package.name] ?? [] : package.files
            let page: HTTPURL?
            let kind: PythonPackageIndex.Lookup.Kind
            switch package.sourceType {
            case nil:
                let name = PythonPackageIndex.normalizedName(package.name)
                page = HTTPURL(string: "https://pypi.org/pypi/\(name)/\(package.version)/json")
                kind = .pypiJSON
            case "legacy":
                page = package.sourceURL.flatMap { PythonPackageIndex.simplePage(index: $0, name: package.name) }
                kind = .simple
            default:
                continue  // git, directory, file, url: no index to read
            }
            guard let page else {
                problems.append("\(source): \(requirement): its source's URL is not one")
                continue
            }
            var pins: [PythonPackageIndex.Pin] = []
            for (file, hash) in files {
                guard let integrity = hexDigest(hash) else {
                    problems.append("\(source): \(requirement): \(file): '\(hash)' is not a sha256, sha384 or sha512 digest")
                    continue
                }
                pins.append(PythonPackageIndex.Pin(filename: file, integrity: integrity, text: hash))
            }
            guard !pins.isEmpty else { continue }
            lookups.append(PythonPackageIndex.Lookup(page: page, kind: kind, requirement: requirement, pins: pins))
        }
        return lookups
    }
}
