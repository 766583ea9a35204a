import Foundation
import TollgateCache
import TollgatePolicy
import TollgateSession

/// The stores `serve` attaches to the policy's sessions: the response cache of `cache`
/// (opened once, shared by every default and background session; ephemeral sessions keep
/// nothing on disk, so they get none).
struct SessionStores: Sendable {
    let cache: ResponseCache

    /// Opens the cache the configuration names (creating its directory).
    init(configuration: PolicyConfiguration, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        let path = configuration.cache.resolvedPath(environment: environment)
        do {
            cache = try ResponseCache(
                path: path, maxSize: configuration.cache.maxSize, shared: configuration.cache.kind == .shared,
                targetedFields: configuration.cache.effectiveTargetedFields(listeners: configuration.listeners),
                storesSetCookie: configuration.cache.setCookie == .store,
                rangeOffsetLimit: configuration.cache.rangeOffsetLimit
            )
        } catch {
            throw CommandFailure.user("cannot open the cache at \(path): \(error)")
        }
    }

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
