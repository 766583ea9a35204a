import TollgateCache
import TollgateHTTP
import TollgateSession

extension SessionSettings {
    static let keys = [
        "configuration", "cache-policy", "timeout-request", "timeout-resource", "max-connections-per-host",
        "cookies", "cookie-accept", "redirects", "upstream-proxy", "upstream-proxy-credentials",
        "headers",
    ]

    /// Header fields the proxy sets itself; a session may not add them.
    static let reservedHeaders = [
        "host", "content-length", "transfer-encoding", "connection", "upgrade", "te", "trailer",
    ]

    /// Reads `sessions`: a mapping of names to sessions. `default` is added when not declared.
    static func readAll(_ node: ConfigNode) -> [String: SessionSettings] {
        var sessions: [String: SessionSettings] = [:]
        if let entries = node.mapping(keys: nil) {
            for (name, sessionNode) in entries.entries {
                guard name.utf8.allSatisfy({ isNameByte($0) }), !name.isEmpty else {
                    sessionNode.report("a session name has only letters, digits, \".\", \"_\" and \"-\"")
                    continue
                }
                sessions[name] = SessionSettings(node: sessionNode)
            }
        }
        if sessions[defaultName] == nil { sessions[defaultName] = SessionSettings() }
        return sessions
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        (byte >= 48 && byte <= 57) || (byte >= 65 && byte <= 90) || (byte >= 97 && byte <= 122) || byte == 45
            || byte == 46 || byte == 95
    }

    /// Reads one session.
    ///
    /// ## Configuration keys:
    /// | key | type | default |
    /// |---|---|---|
    /// | `configuration` | `default` \| `ephemeral` \| `background` | `default` |
    /// | `cache-policy` | `protocol` \| `reload` \| `reload-revalidating` \| `return-cache-else-load` \| `return-cache-dont-load` | `protocol` |
    /// | `timeout-request` | duration | `60s` |
    /// | `timeout-resource` | duration | `7d` |
    /// | `max-connections-per-host` | integer 1…1000 | `6` |
    /// | `cookies` | `passthrough` \| `jar` | `passthrough` |
    /// | `cookie-accept` | `always` \| `never` \| `main-document-domain` | `main-document-domain` |
    /// | `redirects` | `pass` \| `follow` \| `follow-same-host` | `pass` |
    /// | `upstream-proxy` | `http://HOST:PORT`, or a list of them (the first, then fallbacks) | none |
    /// | `upstream-proxy-credentials` | `{ user, password-env \| password-file }` (file mode 0600) | none |
    /// | `headers` | mapping of field name to value | none |
    init(node: ConfigNode) {
        self.init()
        guard let entry = node.mapping(keys: SessionSettings.keys) else { return }
        if let kind = entry["configuration"]?.choice(ConfigurationKind.self) { configuration = kind }
        if let policy = entry["cache-policy"]?.choice(RequestCachePolicy.self) { cachePolicy = policy }
        if let value = entry["timeout-request"]?.duration() { timeoutRequest = value }
        if let value = entry["timeout-resource"]?.duration() { timeoutResource = value }
        if let value = entry["max-connections-per-host"]?.int(in: 1...1000) { maxConnectionsPerHost = value }
        if let value = entry["cookies"]?.choice(Cookies.self) { cookies = value }
        if let word = entry["cookie-accept"]?.word(CookieAcceptPolicy.allWords.map(\.configurationWord)),
            let policy = CookieAcceptPolicy(configurationWord: word)
        {
            cookieAccept = policy
        }
        if let value = entry["redirects"]?.choice(Redirects.self) { redirects = value }
        if let proxyNode = entry["upstream-proxy"], let items = proxyNode.scalarOrList("a URL http://HOST:PORT or a list of them") {
            // A list: the first parent, then the ones tried in order when it cannot be connected to.
            var proxies: [UpstreamProxy] = []
            for item in items {
                guard let text = item.nonEmptyString("a URL http://HOST:PORT") else { continue }
                if let proxy = UpstreamProxy(url: text) {
                    proxies.append(proxy)
                } else if text.lowercased().hasPrefix("https://") {
                    item.report("bad upstream proxy \"\(text)\": only http:// parent proxies are supported")
                } else {
                    item.report("bad upstream proxy \"\(text)\"; expected http://HOST:PORT")
                }
            }
            if items.isEmpty { proxyNode.report("list at least one http://HOST:PORT (or leave upstream-proxy out)") }
            upstreamProxy = proxies.first
            upstreamProxyFallbacks = Array(proxies.dropFirst())
        }
        if let node = entry["upstream-proxy-credentials"] {
            upstreamProxyCredentials = UpstreamProxyCredentials(node: node)
            if upstreamProxyCredentials != nil, entry["upstream-proxy"] == nil {
                node.report("upstream-proxy-credentials needs an upstream-proxy to answer")
            }
        }
        if let headersNode = entry["headers"] {
            headers = headersNode.headerFields(reserved: Set(SessionSettings.reservedHeaders), by: "the proxy itself")
        }
    }
}

extension UpstreamProxyCredentials {
    /// Reads a session's `upstream-proxy-credentials`.
    ///
    /// ## Configuration keys:
    /// | key | type | default |
    /// |---|---|---|
    /// | `user` | string | required |
    /// | `password-env` | environment variable name | one of `password-env`, `password-file` is required |
    /// | `password-file` | file path, readable by its owner alone (0600) | |
    init?(node: ConfigNode) {
        guard let entry = node.mapping(keys: ["user", "password-env", "password-file"]) else { return nil }
        let user = entry.required("user")?.nonEmptyString()
        let password = HostRule.Credential.PasswordSource(entry: entry, node: node, ownerOnly: true)
        guard let user, let password else { return nil }
        self.init(user: user, password: password)
    }
}
