extension PolicyConfiguration {
    /// The response cache (`cache`).
    public struct Cache: Hashable, Sendable {
        /// Whose responses the cache may keep (RFC 9111 §1 shared vs private cache).
        public enum Kind: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
            /// Serves many users: `private` responses and responses to requests with
            /// Authorization are not stored (unless the response allows it), `s-maxage` applies.
            case shared
            /// Serves one user (a developer's machine): `private` responses may be stored.
            case `private`

            public var description: String { rawValue }
        }

        /// The LMDB environment directory (`path`), `~` expanded and relative paths resolved
        /// against the configuration file's directory. Default: nil, meaning
        /// ``defaultPath(environment:)``.
        public var path: String?
        /// The cache's capacity in bytes (`max-size`). Default: 1 GiB.
        public var maxSize: Int64 = 1 << 30
        /// Shared or private (`kind`). Default: shared.
        public var kind: Kind = .shared
        /// The targeted cache-control fields (RFC 9213) the cache honours over Cache-Control, its
        /// own name first (`targeted-fields`). Default: nil, meaning ``defaultTargetedFields`` when
        /// a listener is a reverse one (a gateway is the "CDN" these fields address), none otherwise.
        public var targetedFields: [String]?

        /// What stored copies do with `Set-Cookie` (`set-cookie`). Default: strip.
        public var setCookie: SetCookie = .strip
        /// When a Range request that misses is fetched whole instead of passing its Range on
        /// (`range-offset-limit`, Squid's `range_offset_limit`): when its range starts before this
        /// many bytes. 0 (the default): never; nil (`none`): always.
        public var rangeOffsetLimit: Int64? = 0
        /// Serve from the cache without ever writing to it (`read-only`): nothing is stored,
        /// updated, removed or evicted, and hits are counted in memory only — for a cache a build
        /// was handed as it was warmed (a read-only mount, a copy it must not change). Default: false.
        public var readOnly = false
        /// The most variants (responses a `Vary` selects between) kept for one URL
        /// (`max-variants`); storing one more removes the URL's least recently used, as ATS's
        /// `max_alts`. Default: 16.
        public var maxVariants = 16
        /// The response field whose tags group stored responses for a purge by tag
        /// (`tag-header`: Fastly's `Surrogate-Key`, Cloudflare's `Cache-Tag`, Varnish's `xkey`;
        /// see `CacheTags`). Stored as the origin sent it and removed from what clients get, as
        /// those CDNs do. Default: nil, no tags.
        public var tagHeader: String?

        /// `cache.set-cookie`.
        public enum SetCookie: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
            /// Stored copies never carry Set-Cookie: a cookie meant for one client is never
            /// replayed to another (Squid's and ATS's behaviour).
            case strip
            /// Stored copies keep it, as RFC 9111 allows: for a private cache, or origins that set
            /// cookies on public content and expect every client to get them.
            case store

            public var description: String { rawValue }
        }

        /// The targeted fields of a reverse proxy: its own, then the CDN one.
        public static let defaultTargetedFields = ["Tollgate-Cache-Control", "CDN-Cache-Control"]

        /// ``targetedFields``, or the default for `listeners`.
        public func effectiveTargetedFields(listeners: [Listener]) -> [String] {
            targetedFields ?? (listeners.contains { $0.mode == .reverse } ? Self.defaultTargetedFields : [])
        }

        /// A cache setting with every field at its default.
        public init() {}

        /// `$XDG_CACHE_HOME/tollgate` when `XDG_CACHE_HOME` is set and absolute, else
        /// `$HOME/.cache/tollgate` (the XDG base directory rules).
        public static func defaultPath(environment: [String: String]) -> String {
            if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
                return PathResolution.joined(xdg, "tollgate")
            }
            return PathResolution.joined(environment["HOME"] ?? "/", ".cache/tollgate")
        }

        /// ``path``, or the default path when it is nil.
        public func resolvedPath(environment: [String: String]) -> String {
            path ?? Cache.defaultPath(environment: environment)
        }
    }

    /// TLS interception (`interception`): the local CA that signs certificates for hosts whose
    /// rule says `intercept: true`.
    public struct Interception: Hashable, Sendable {
        /// The CA's directory (`ca-dir`), as `tollgate ca init` creates it. Default: nil, meaning
        /// ``defaultCADirectory(environment:)``.
        public var caDirectory: String?

        /// An interception setting with every field at its default.
        public init() {}

        /// `$XDG_DATA_HOME/tollgate/ca` when `XDG_DATA_HOME` is set and absolute, else
        /// `$HOME/.local/share/tollgate/ca`.
        public static func defaultCADirectory(environment: [String: String]) -> String {
            if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {
                return PathResolution.joined(xdg, "tollgate/ca")
            }
            return PathResolution.joined(environment["HOME"] ?? "/", ".local/share/tollgate/ca")
        }

        /// ``caDirectory``, or the default directory when it is nil.
        public func resolvedCADirectory(environment: [String: String]) -> String {
            caDirectory ?? Interception.defaultCADirectory(environment: environment)
        }
    }
}
