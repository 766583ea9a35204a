import Foundation
import TollgateCache
import TollgateHTTP

/// A Python package's files as an index lists them, for `tollgate warm` of a lockfile that pins
/// files by digest or name but not by URL (pip's `requirements.txt` with `--hash`, `poetry.lock`):
/// the page the installer reads first is warmed (it needs it offline too), then read here for the
/// URLs of the pinned files.
///
/// - A **simple repository page** (PEP 503 HTML: `<a href="URL#sha256=HEX">FILENAME</a>`; or
///   PEP 691 JSON, `application/vnd.pypi.simple.v1+json`: `files[].{filename, url, hashes}`),
///   `INDEX/NAME/` — what pip and poetry's other sources read.
/// - **PyPI's JSON API** for one release, `https://pypi.org/pypi/NAME/VERSION/json`
///   (`urls[].{filename, url, digests}`) — what poetry reads for packages from PyPI.
struct PythonPackageIndex {
    /// One page to read, and the files it must give URLs for.
    struct Lookup {
        enum Kind { case simple, pypiJSON }

        var page: HTTPURL
        var kind: Kind
        /// `NAME==VERSION`, for problem lines.
        var requirement: String
        var pins: [Pin]
        /// Other pages the installer also reads for the project's files (pip's
        /// `--extra-index-url` simple pages, `--find-links` pages), of the same kind: warmed too,
        /// and a pin may be found on any of them. One that is not stored fails nothing by
        /// itself (the installer goes on without it, offline too).
        var morePages: [HTTPURL] = []

        /// ``page`` and then ``morePages``.
        var pages: [HTTPURL] { [page] + morePages }
    }

    /// A pinned file: by its name (poetry) or only by its digest (pip), with the digest its bytes
    /// must have.
    struct Pin {
        var filename: String?
        var integrity: SubresourceIntegrity
        /// The digest as the lockfile wrote it (`sha256:HEX`).
        var text: String
    }

    /// A file the page lists.
    struct File {
        var filename: String
        var url: HTTPURL
        /// Lowercase hex SHA-256, when the page gives it.
        var sha256: String?
    }

    /// PEP 503's normalized project name: lowercased, runs of `-`, `_` and `.` as one `-`.
    static func normalizedName(_ name: String) -> String {
        var result = ""
        var inSeparator = false
        for character in name.lowercased() {
            if character == "-" || character == "_" || character == "." {
                if !inSeparator { result.append("-") }
                inSeparator = true
            } else {
                result.append(character)
                inSeparator = false
            }
        }
        return result
    }

    /// The simple page of `name` on the index at `index` (`https://pypi.org/simple/` and without
    /// the slash alike).
    static func simplePage(index: String, name: String) -> HTTPURL? {
        let base = index.hasSuffix("/") ? index : index + "/"
        return HTTPURL(string: base + normalizedName(name) + "/")
    }

    /// The files `body` (the page at `page`, of `contentType`) lists.
    static func files(in body: [UInt8], page: HTTPURL, contentType: String?, kind: Lookup.Kind) -> [File] {
        let type = contentType?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
        if kind == .pypiJSON || type.hasSuffix("json") {
            guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else { return [] }
            let entries = (object[kind == .pypiJSON ? "urls" : "files"] as? [[String: Any]]) ?? []
            return entries.compactMap { entry in
                guard let filename = entry["filename"] as? String, let href = entry["url"] as? String,
                    let url = try? page.resolving(href)
                else { return nil }
                let digests = (entry[kind == .pypiJSON ? "digests" : "hashes"] as? [String: Any]) ?? [:]
                return File(filename: filename, url: url, sha256: (digests["sha256"] as? String)?.lowercased())
            }
        }
        return anchors(in: String(decoding: body, as: UTF8.self), page: page)
    }

    /// The `<a href=…>TEXT</a>` of a PEP 503 page: the URL without its fragment, the file's name
    /// (the text, else the URL's last segment) and the fragment's `sha256=`.
    private static func anchors(in html: String, page: HTTPURL) -> [File] {
        var files: [File] = []
        var rest = Substring(html)
        while let open = rest.range(of: "<a ", options: .caseInsensitive) {
            guard let close = rest[open.upperBound...].firstIndex(of: ">") else { break }
            let attributes = rest[open.upperBound..<close]
            let textEnd = rest[close...].range(of: "</a>", options: .caseInsensitive)?.lowerBound ?? rest.endIndex
            let text = decodedEntities(String(rest[rest.index(after: close)..<textEnd])).trimmingCharacters(in: .whitespacesAndNewlines)
            rest = rest[textEnd...]
            guard let href = attribute("href", in: attributes).map(decodedEntities) else { continue }
            var reference = href
            var sha256: String?
            if let hash = href.firstIndex(of: "#") {
                reference = String(href[..<hash])
                let fragment = href[href.index(after: hash)...]
                if fragment.lowercased().hasPrefix("sha256=") { sha256 = fragment.dropFirst(7).lowercased() }
            }
            guard let url = try? page.resolving(reference) else { continue }
            let filename = text.isEmpty ? String(url.path.split(separator: "/").last ?? "") : text
            files.append(File(filename: filename, url: url, sha256: sha256))
        }
        return files
    }

    /// The value of `name="…"` (or `'…'`, or unquoted) among an element's attributes.
    private static func attribute(_ name: String, in attributes: Substring) -> String? {
        var rest = attributes
        while let found = rest.range(of: name, options: .caseInsensitive) {
            let before = found.lowerBound == rest.startIndex ? " " : rest[rest.index(before: found.lowerBound)]
            var after = rest[found.upperBound...].drop { $0 == " " }
            rest = rest[found.upperBound...]
            guard before == " " || before == "\t" || before == "\n", after.first == "=" else { continue }
            after = after.dropFirst().drop { $0 == " " }
            guard let quote = after.first else { return nil }
            if quote == "\"" || quote == "'" {
                let value = after.dropFirst()
                return value.firstIndex(of: quote).map { String(value[..<$0]) }
            }
            return String(after.prefix { !$0.isWhitespace && $0 != ">" })
        }
        return nil
    }

    /// `&amp;`, `&lt;`, `&gt;`, `&quot;`, `&#39;` and numeric references decoded.
    private static func decodedEntities(_ text: String) -> String {
        guard text.contains("&") else { return text }
        var result = ""
        var rest = Substring(text)
        while let amp = rest.firstIndex(of: "&") {
            result += rest[..<amp]
            let tail = rest[amp...]
            guard let semicolon = tail.firstIndex(of: ";"), tail.distance(from: amp, to: semicolon) <= 10 else {
                result += "&"
                rest = rest[rest.index(after: amp)...]
                continue
            }
            let entity = tail[tail.index(after: amp)..<semicolon]
            let named = ["amp": "&", "lt": "<", "gt": ">", "quot": "\"", "apos": "'"]
            if let character = named[String(entity)] {
                result += character
            } else if entity.hasPrefix("#x") || entity.hasPrefix("#X"), let code = UInt32(entity.dropFirst(2), radix: 16),
                let scalar = Unicode.Scalar(code)
            {
                result.unicodeScalars.append(scalar)
            } else if entity.hasPrefix("#"), let code = UInt32(entity.dropFirst()), let scalar = Unicode.Scalar(code) {
                result.unicodeScalars.append(scalar)
            } else {
                result += tail[amp...semicolon]
            }
            rest = rest[rest.index(after: semicolon)...]
        }
        return result + rest
    }

    /// The pinned files of `lookup` among `files`: by name where the pin names one, else by the
    /// page's SHA-256; each with the pin's digest. `problems` gets a line for each pin not found.
    static func artifacts(
        of lookup: Lookup, in files: [File], source: String, problems: inout [String]
    ) -> [PackageLockfile.Artifact] {
        var found: [PackageLockfile.Artifact] = []
        for pin in lookup.pins {
            let file: File?
            if let filename = pin.filename {
                file = files.first { $0.filename == filename }
            } else if pin.integrity.algorithm == .sha256 {
                let hex = pin.integrity.digests.first.map(SHA256.hex)
                file = files.first { $0.sha256 != nil && $0.sha256 == hex }
            } else {
                file = nil
            }
            guard let file else {
                let what = pin.filename ?? "file with \(pin.text)"
                let pages = lookup.pages.map(\.absoluteString).joined(separator: " or ")
                problems.append("\(source): \(lookup.requirement): \(pages) lists no \(what)")
                continue
            }
            found.append(PackageLockfile.Artifact(url: file.url, integrity: .integrity(pin.integrity), release: lookup.requirement))
        }
        return found
    }
}
