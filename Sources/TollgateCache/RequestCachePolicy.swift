/// How a request uses the cache, with the meaning of URLSession's `URLRequest.CachePolicy`.
public enum RequestCachePolicy: String, Hashable, Sendable, CaseIterable {
    /// RFC 9111 semantics: a fresh stored response is used, a stale one is validated, otherwise the network.
    case `protocol` = "protocol"
    /// Ignore stored responses; always load from the origin (the response may still be stored).
    case reload = "reload"
    /// Use a stored response only after the origin confirmed it (a conditional request every time).
    case reloadRevalidating = "reload-revalidating"
    /// Use any stored response, fresh or stale; load from the origin only when nothing is stored.
    case returnCacheElseLoad = "return-cache-else-load"
    /// Use any stored response; never touch the network (offline): a miss is an error.
    case returnCacheDontLoad = "return-cache-dont-load"

    /// Whether this policy ever opens a connection.
    public var mayLoadFromNetwork: Bool { self != .returnCacheDontLoad }

    /// Whether a response loaded under this policy may be stored: every policy that loads
    /// from the network lets the response be stored (URLSession's `reload…` policies too).
    public var allowsStoring: Bool { mayLoadFromNetwork }

    /// Whether this policy may use a stored response without the origin confirming it.
    public var mayUseStoredResponseUnvalidated: Bool {
        self == .protocol || self == .returnCacheElseLoad || self == .returnCacheDontLoad
    }
}
