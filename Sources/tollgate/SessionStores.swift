import Foundation
import TollgateCache
import TollgatePolicy
import TollgateSession

/// The stores `serve` attaches to the policy's sessions: the response cache of `cache`
/// (opened once, shared by every default and background session; ephemeral sessions keep
/// nothing on disk, so they get none).
struct SessionStores: Sendable {
    let cache: ResponseCache

    /// Opens the cache the configuration names (creating its directory), read-only when
    /// `cache.read-only` says so or `readOnly` is true.
    init(configuration: PolicyConfiguration, readOnly: Bool = false, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        let path = configuration.cache.resolvedPath(environment: environment)
        do {
            cache = try ResponseCache(
                path: path, maxSize: configuration.cache.maxSize, shared: configuration.cache.kind == .shared,
                targetedFields: configuration.cache.effectiveTargetedFields(listeners: configuration.listeners),
                storesSetCookie: configuration.cache.setCookie == .store,
                rangeOffsetLimit: configuration.cache.rangeOffsetLimit,
                maximumVariantsPerKey: configuration.cache.maxVariants,
                readOnly: readOnly || configuration.cache.readOnly
            )
        } catch {
            let hint =
                !(readOnly || configuration.cache.readOnly) && Self.isUnwritableDirectory(path)
                ? " (this process may not write it: to serve it as it is, set cache.read-only: true or run --offline)" : ""
            throw CommandFailure.user("cannot open the cache at \(path): \(error)\(hint)")
        }
    }

    /// Whether the cache directory at `path` exists and this process may not write it (a
    /// read-only mount, another user's copy): an offline proxy then opens it read-only.
    static func isUnwritableDirectory(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else { return false }
        return access(path, W_OK) != 0 || access(path + "/data.mdb", W_OK) != 0 && access(path + "/data.mdb", F_OK) == 0
    }

    /// Whether the cache was opened read-only.
    var isReadOnly: Bool { cache.store.isReadOnly }

    /// Closes the cache once every task has ended: the hits noted in memory (LRU recency, the
    /// hit and miss totals) are written, not lost with the process.
    func close() {
        cache.store.close()
    }

    /// For PolicyRuntime's `prepareSession`: attaches the stores a session of this kind keeps.
    var prepareSession: PolicyRuntime.SessionPreparation {
        let cache = self.cache
        return { _, _, configuration in
            if !configuration.kind.isEphemeral { configuration.responseCache = cache }
        }
    }
}
