import Foundation
import TollgateCache
@testable import TollgateSession

/// A real LMDB-backed response cache in a temporary directory, removed at the end.
final class CacheFixture: @unchecked Sendable {
    let directory: String
    private(set) var cache: ResponseCache

    init(maxSize: Int64 = 64 << 20, shared: Bool = true) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-cache-\(UUID().uuidString)").path
        cache = try ResponseCache(path: directory, maxSize: maxSize, shared: shared)
    }

    func session(delegate: (any SessionDelegate)? = nil, policy: RequestCachePolicy = .protocol) -> Session {
        var configuration = SessionConfiguration.ephemeral
        configuration.responseCache = cache
        configuration.requestCachePolicy = policy
        return Session(configuration: configuration, delegate: delegate)
    }

    /// Closes and opens the store again (as after a restart), read-only if asked.
    func reopen(readOnly: Bool = false) throws {
        cache.store.close()
        cache = try ResponseCache(path: directory, maxSize: cache.store.options.maxSize, readOnly: readOnly)
    }

    deinit {
        cache.store.close()
        try? FileManager.default.removeItem(atPath: directory)
    }
}
