public import TollgateHTTP

extension HostRule {
    /// One entry of `map-remote`: requests for a path (and under it) sent to another URL instead
    /// (mitmproxy's `map_remote`, Charles' and Proxyman's Map Remote, nginx's `proxy_pass` with a
    /// URI): a developer points a live site's API at a local server, or production at staging.
    ///
    /// The matched prefix `path` is replaced by `to`'s path, the rest and the query kept:
    /// `{ path: /v2/, to: http://127.0.0.1:8080/api/v2/ }` sends `/v2/users?page=2` to
    /// `http://127.0.0.1:8080/api/v2/users?page=2`.
    public struct RemoteMapping: Hashable, Sendable {
        /// The request path mapped, and the paths under it (at a `/`).
        public var path: String
        /// Where it goes: scheme, host, port and the path that replaces ``path``.
        public var to: HTTPURL

        /// A mapping of `path` to `to`.
        public init(path: String = "/", to: HTTPURL) {
            self.path = path
            self.to = to
        }

        /// The URL `url` goes to instead, or nil when this mapping is not for its path.
        public func map(_ url: HTTPURL) -> HTTPURL? {
            guard let rest = Self.rest(of: url.path, under: path) else { return nil }
            var target = Self.joined(to.path, rest)
            if let query = url.query { target += "?" + query }
            return HTTPURL(scheme: to.scheme, host: to.host, port: to.port, pathAndQuery: target)
        }

        /// What follows `prefix` in `path` when `path` is `prefix` or under it at a `/` (`/api/x`
        /// under `/api` or `/api/`, not `/apiary`), or nil.
        static func rest(of path: String, under prefix: String) -> Substring? {
            if path == prefix { return "" }
            guard prefix.hasSuffix("/") ? path.hasPrefix(prefix) : path.hasPrefix(prefix + "/") else { return nil }
            return path.dropFirst(prefix.count)
        }

        /// `prefix` and `rest` with one `/` where the two meet: `/api/` + `/users` or `/api` +
        /// `users` are `/api/users`.
        static func joined(_ prefix: String, _ rest: Substring) -> String {
            var path = prefix
            if path.hasSuffix("/") && rest.hasPrefix("/") {
                path.removeLast()
            } else if !path.hasSuffix("/") && !rest.isEmpty && !rest.hasPrefix("/") {
                path += "/"
            }
            return path + rest
        }
    }
}
