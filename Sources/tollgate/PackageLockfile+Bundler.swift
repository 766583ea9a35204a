import Foundation
import TollgateCache
import TollgateHTTP

/// Bundler's `Gemfile.lock`: each `GEM` section's gems from its `remote`, as `bundle install`
/// fetches them — the compact index (`INDEX/versions`, then `INDEX/info/NAME` for each gem, where
/// INDEX is the remote, but `index.rubygems.org` for `rubygems.org`: bundler reads them even with a
/// lockfile, and they grow as gems are published, so they are not checked), then each gem
/// (`REMOTE/gems/NAME-VERSION[-PLATFORM].gem`), checked by its SHA-256
/// where the lockfile has a `CHECKSUMS` section (Bundler 2.5 and later). `GIT` and `PATH`
/// sources have nothing to fetch over HTTP.
extension PackageLockfile {
    /// Whether `text` is a Gemfile.lock: a `GEM` section with a `remote:` and `specs:`.
    static func isGemfileLock(_ text: String) -> Bool {
        (text.hasPrefix("GEM\n") || text.contains("\nGEM\n")) && text.contains("\n  remote: ") && text.contains("\n  specs:\n")
    }

    static func readGemfileLock(_ text: String, _ add: Add) {
        var section = ""
        var remote: String?
        var gems: [(remote: String, name: String, version: String)] = []
        var checksums: [String: String] = [:]
        for raw in text.split(separator: "\n") {
            let line = String(raw)
            if !line.hasPrefix(" ") {
                section = line.trimmingCharacters(in: .whitespaces)
                remote = nil
                continue
            }
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            switch section {
            case "GEM":
                if line.hasPrefix("  remote: ") {
                    let value = String(line.dropFirst("  remote: ".count)).trimmingCharacters(in: .whitespaces)
                    remote = value.hasSuffix("/") ? value : value + "/"
                } else if let remote, line.hasPrefix("    "), !line.hasPrefix("     "), let spec = gemSpec(trimmed) {
                    gems.append((remote, spec.name, spec.version))
                }
            case "CHECKSUMS":
                // `name (version) sha256=HEX[,…]`
                guard let close = trimmed.firstIndex(of: ")") else { continue }
                let spec = String(trimmed[...close])
                for digest in trimmed[trimmed.index(after: close)...].split(whereSeparator: { $0 == "," || $0 == " " })
                where digest.hasPrefix("sha256=") {
                    checksums[spec] = String(digest.dropFirst("sha256=".count))
                }
            default:
                break
            }
        }
        // (A URL listed again is listed once: `add` keeps the first.)
        for gem in gems {
            let index = compactIndex(of: gem.remote)
            add("\(gem.remote) index", index + "versions", nil, nil)
            add("\(gem.name) (index)", index + "info/" + gem.name, nil, nil)
            let checksum = checksums["\(gem.name) (\(gem.version))"]
            add(
                "\(gem.name) (\(gem.version))", "\(gem.remote)gems/\(gem.name)-\(gem.version).gem",
                checksum.flatMap { SubresourceIntegrity(algorithm: .sha256, hex: $0) }, checksum
            )
        }
    }

    /// Where bundler reads a remote's compact index: the remote itself, with `rubygems.org`'s host
    /// replaced by `index.rubygems.org` (bundler's `Fetcher::Base#fetch_uri`).
    static func compactIndex(of remote: String) -> String {
        guard let url = HTTPURL(string: remote), url.host == "rubygems.org" else { return remote }
        return HTTPURL(scheme: url.scheme, host: "index.rubygems.org", port: url.port, pathAndQuery: url.pathAndQuery).absoluteString
    }

    /// `name (version)` of a spec line: the name and the version (with its platform, as the gem's
    /// file name has it).
    private static func gemSpec(_ line: String) -> (name: String, version: String)? {
        guard let open = line.firstIndex(of: "("), line.hasSuffix(")") else { return nil }
        let name = line[..<open].trimmingCharacters(in: .whitespaces)
        let version = line[line.index(after: open)..<line.index(before: line.endIndex)]
        guard !name.isEmpty, !version.isEmpty, !version.contains(" ") else { return nil }
        return (name, String(version))
    }
}
