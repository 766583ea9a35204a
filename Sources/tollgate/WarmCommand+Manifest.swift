import Foundation
import TollgateCache
import TollgateHTTP
import TollgatePolicy

/// `warm --manifest FILE`.
extension WarmCommand {
    /// Writes the manifest of what the cache holds for each URL that is in it now, merged into
    /// the manifest at `path` when there is one (a URL warmed again replaces its entry).
    func writeManifest(_ path: String, outcomes: [URLWarmer.Outcome], urls: [HTTPURL], store: CacheStore) throws {
        var existing = CacheManifest()
        if FileManager.default.fileExists(atPath: path) {
            do {
                existing = try CacheManifest.load(contentsOf: path)
            } catch {
                throw CommandFailure.user("--manifest: \(error.description) (remove it, or name another file)")
            }
        }
        let configSHA256 = SHA256.hex(SHA256.hash(configurationBytes()))
        var entries: [CacheManifest.Entry] = []
        for (outcome, url) in zip(outcomes, urls) {
            // A failed URL (an integrity mismatch removed what was stored) has no entry.
            guard outcome.kind != .failed, let stored = outcome.stored else { continue }
            do {
                if let entry = try store.manifestEntry(
                    key: stored.key, requestHeaders: stored.requestHeaders, listedURL: url.absoluteString,
                    configSHA256: configSHA256
                ) {
                    entries.append(entry)
                } else {
                    standardError("tollgate: --manifest: \(url): nothing is stored under \(stored.key.url)")
                }
            } catch {
                standardError("tollgate: --manifest: \(url): cannot read the cache: \(error)")
            }
        }
        do {
            try existing.merging(entries).write(to: path)
        } catch {
            throw CommandFailure.user("--manifest: cannot write \(path): \(error.localizedDescription)")
        }
        standardError("tollgate: manifest \(path): \(entries.count) entries written")
    }

    /// The configuration's bytes, whose hash the manifest records: the file, or the embedded default.
    private func configurationBytes() -> [UInt8] {
        if let config, let data = FileManager.default.contents(atPath: config) { return Array(data) }
        return Array(EmbeddedDefaultConfig.yaml.utf8)
    }
}
