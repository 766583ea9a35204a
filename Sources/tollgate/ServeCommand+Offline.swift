import Foundation
import TollgateCache
import TollgatePolicy
import TollgateProxy
import TollgateSession

/// `serve --offline [--manifest FILE] [--miss-report FILE]`.
extension ServeCommand {
    /// The offline mode the listeners share: `--offline`, and the manifest checked against the
    /// cache now (each entry that is missing or differs is reported and left out: its URL is
    /// then a miss). Fails (exit 1) on a manifest that cannot be read, or one given to a proxy
    /// that is not offline.
    func prepareOffline(_ configuration: PolicyConfiguration, cache: ResponseCache?) throws -> OfflineMode {
        let isOffline = offline || configuration.offline
        if let missReport {
            do {
                try OfflineMissReport().write(to: missReport)
            } catch {
                throw CommandFailure.user("--miss-report: cannot write \(missReport): \(error.localizedDescription)")
            }
        }
        guard let manifestPath = manifest else {
            if isOffline { standardError("tollgate: offline: nothing goes upstream; a miss is answered 504 offline-miss") }
            return OfflineMode(forced: offline)
        }
        guard isOffline else {
            throw CommandFailure.user("--manifest locks what an offline proxy serves: add --offline (or offline: true)")
        }
        let loaded: CacheManifest
        do {
            loaded = try CacheManifest.load(contentsOf: manifestPath)
        } catch {
            throw CommandFailure.user("--manifest: \(error.description)")
        }
        guard let cache else { throw CommandFailure.user("--manifest: there is no cache to serve it from") }
        let problems = cache.store.check(loaded)
        for problem in problems { standardError("tollgate: manifest: \(problem)") }
        let bad = Set(problems.map(\.entry.identity))
        let lock = ManifestLock(
            loaded, problems: problems,
            representations: cache.store.representations(of: loaded.entries.filter { !bad.contains($0.identity) })
        )
        standardError(
            "tollgate: offline: serving the \(lock.count) of \(loaded.entries.count) manifest entries that match the cache"
                + (problems.isEmpty ? "" : " (\(problems.count) left out: their URLs are misses)")
        )
        return OfflineMode(forced: offline, manifest: lock)
    }

    /// `--miss-report FILE`: the misses, written at shutdown.
    func writeMissReport(_ mode: OfflineMode) {
        guard let missReport else { return }
        do {
            try mode.misses.write(to: missReport)
        } catch {
            standardError("tollgate: --miss-report: cannot write \(missReport): \(error.localizedDescription)")
        }
    }
}
