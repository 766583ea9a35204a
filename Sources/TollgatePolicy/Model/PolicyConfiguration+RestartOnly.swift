extension PolicyConfiguration {
    /// The sections of `new` that differ from this configuration in what only a restart of
    /// `tollgate serve` changes (a reload leaves them as the proxy started): `listen` (but a TLS
    /// listener's certificates, which a reload reads again), `admin`, `cache` (but `tag-header`),
    /// `log` (but `har-entries`) and `interception`. In file order; empty when a reload applies everything.
    ///
    /// Compare against the configuration the process started with, not the previous reload's: a
    /// change that waits for a restart keeps waiting through later reloads.
    public func restartOnlyChanges(to new: PolicyConfiguration) -> [String] {
        var changed: [String] = []
        // A TLS listener's certificates are reloaded; whether a listener has TLS is not.
        func withoutCertificates(_ listeners: [Listener]) -> [Listener] {
            listeners.map { listener in
                var kept = listener
                if listener.tls != nil { kept.tls = Self.certificatesReadOnReload }
                return kept
            }
        }
        if withoutCertificates(listeners) != withoutCertificates(new.listeners) { changed.append("listen") }
        if admin != new.admin { changed.append("admin") }
        // `tag-header` is read where it is used (the rules, a purge): a reload applies it.
        var startedCache = cache
        startedCache.tagHeader = new.cache.tagHeader
        if startedCache != new.cache { changed.append("cache") }
        if (log.access, log.format, log.level) != (new.log.access, new.log.format, new.log.level) { changed.append("log") }
        if interception != new.interception { changed.append("interception") }
        return changed
    }

    /// Stands in for every TLS listener's certificates when listeners are compared.
    private static let certificatesReadOnReload = Listener.TLS(certificates: [])
}
