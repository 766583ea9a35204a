import Foundation
import TollgateCache

/// Composer's `composer.lock` (JSON: `content-hash`, `packages`, `packages-dev`): `composer
/// install` downloads each package's `dist` archive — nothing else, no repository metadata — from
/// the first URL Composer tries: a preferred `dist.mirrors` entry (the last listed first, as
/// Composer puts each in front), else `dist.url`, `%package%`, `%version%`, `%reference%` and
/// `%type%` filled in as Composer fills them. `dist.shasum` (SHA-1 of the archive), when the lock
/// has one, is checked (Packagist's GitHub archives have none). Packages with only a `source`
/// (a git clone) are left out.
extension PackageLockfile {
    /// Whether `text` is a composer.lock: a JSON object with `content-hash` and a `packages` list.
    static func isComposerLock(_ text: String) -> Bool {
        guard text.contains("\"content-hash\""), text.contains("\"packages\""),
            let root = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        else { return false }
        return root["content-hash"] is String && root["packages"] is [Any]
    }

    static func readComposerLock(_ text: String, source: String, _ add: Add) throws {
        guard let root = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            throw CommandFailure.user("\(source): not a JSON object")
        }
        for section in ["packages", "packages-dev"] {
            for case let package as [String: Any] in root[section] as? [Any] ?? [] {
                guard let name = package["name"] as? String, let dist = package["dist"] as? [String: Any],
                    let url = composerDistURL(dist, name: name, version: package["version"] as? String ?? "")
                else { continue }
                let shasum = (dist["shasum"] as? String).flatMap { $0.isEmpty ? nil : $0 }
                add("\(name) \(package["version"] as? String ?? "")", url, shasum.flatMap { SubresourceIntegrity(algorithm: .sha1, hex: $0) }, shasum)
            }
        }
    }

    /// The URL Composer downloads a `dist` from first (`Package::getDistUrls`): `dist.url`, with
    /// each mirror put in front when preferred and behind it otherwise.
    private static func composerDistURL(_ dist: [String: Any], name: String, version: String) -> String? {
        guard let url = dist["url"] as? String, !url.isEmpty else { return nil }
        let reference = dist["reference"] as? String ?? ""
        let type = dist["type"] as? String ?? ""
        func filled(_ template: String) -> String {
            // Composer's ComposerMirror::processUrl: a version or reference with a slash is hashed.
            func plain(_ value: String) -> String {
                value.contains("/") ? SHA256.hex(MessageDigest.hash(.md5, Array(value.utf8))) : value
            }
            return template.replacingOccurrences(of: "%package%", with: name)
                .replacingOccurrences(of: "%version%", with: plain(version))
                .replacingOccurrences(of: "%reference%", with: plain(reference))
                .replacingOccurrences(of: "%type%", with: type)
        }
        var urls = [url.contains("%") ? filled(url) : url]
        for case let mirror as [String: Any] in dist["mirrors"] as? [Any] ?? [] {
            guard let template = mirror["url"] as? String else { continue }
            let mirrorURL = filled(template)
            guard !urls.contains(mirrorURL) else { continue }
            if mirror["preferred"] as? Bool == true { urls.insert(mirrorURL, at: 0) } else { urls.append(mirrorURL) }
        }
        return urls.first
    }
}
