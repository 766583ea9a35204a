import TollgateCache
import TollgatePolicy

/// What the listeners of an offline proxy share: whether `--offline` forces the mode (else the
/// configuration's `offline`, reloadable, decides), the manifest it serves by, and the report
/// of what it missed.
///
/// Offline, an exchange makes no name lookup, TCP connection or TLS handshake upstream: a
/// request is answered from the cache whatever the age of the stored response, a miss is
/// `504 offline-miss`, and a CONNECT to a host that is not intercepted too.
public final class OfflineMode: Sendable {
    /// `serve --offline`: offline whatever the configuration says.
    public let forced: Bool
    /// The manifest served by (nil: every stored response is served).
    public let manifest: ManifestLock?
    /// The misses.
    public let misses: OfflineMissReport

    /// Offline mode as the configuration says, unless `forced`.
    public init(forced: Bool = false, manifest: ManifestLock? = nil, misses: OfflineMissReport = OfflineMissReport()) {
        self.forced = forced
        self.manifest = manifest
        self.misses = misses
    }

    /// Whether a proxy under `policy` is offline now.
    func isOffline(_ policy: any ProxyPolicy) -> Bool {
        forced || policy.configuration.offline
    }
}
