import Foundation
import TollgatePolicy

extension ServeCommand {
    /// The line `serve` writes to standard error at start: its version and where it keeps things —
    /// the cache (or that it runs without one), the data directory (credentials, cookies) and the
    /// access log — so a new user knows where to look without reading the configuration.
    static func placesLine(
        _ configuration: PolicyConfiguration, hasCache: Bool, readOnlyCache: Bool = false,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> String {
        let cache =
            hasCache
            ? "cache \(configuration.cache.resolvedPath(environment: environment)) "
                + "(\(configuration.cache.kind), \(Self.size(configuration.cache.maxSize))\(readOnlyCache ? ", read-only" : ""))"
            : "no cache"
        let data = CookieCredentialStores.defaultDirectory(environment: environment)
        let log = "access log \(configuration.log.access) (\(configuration.log.format))"
        return "tollgate \(TollgateVersion.current): \(cache); data \(data); \(log)"
    }

    /// `1 GiB`, `512 MiB`, or bytes.
    private static func size(_ bytes: Int64) -> String {
        if bytes >= 1 << 30, bytes % (1 << 30) == 0 { return "\(bytes >> 30) GiB" }
        if bytes >= 1 << 20, bytes % (1 << 20) == 0 { return "\(bytes >> 20) MiB" }
        return "\(bytes) bytes"
    }
}
