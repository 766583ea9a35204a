import TollgateHTTP
import Yams

extension PolicyConfiguration {
    static let topLevelKeys = [
        "offline", "listen", "admin", "cache", "access", "limits", "log", "sessions", "hosts", "interception",
    ]

    /// Reads a whole policy document; problems go to the node's context.
    ///
    /// ## Configuration keys:
    /// | key | type | default |
    /// |---|---|---|
    /// | `offline` | boolean | `false` |
    /// | `listen` | list of listeners | one forward listener on `127.0.0.1:3128` |
    /// | `admin` | mapping | none |
    /// | `cache` | mapping | shared, 1GiB, `$XDG_CACHE_HOME/tollgate` else `~/.cache/tollgate` |
    /// | `access` | mapping | loopback clients, CONNECT to 443, every destination, no users |
    /// | `limits` | mapping | see ``Limits`` |
    /// | `log` | mapping | combined access log on stderr, level info |
    /// | `sessions` | mapping of name to session | `default` with every field at its default |
    /// | `hosts` | list of host rules | none |
    /// | `interception` | mapping | `ca-dir` `~/.local/share/tollgate/ca` |
    init(document root: ConfigNode) {
        self.init()
        guard let top = root.mapping(keys: PolicyConfiguration.topLevelKeys) else { return }
        if let value = top["offline"]?.bool() { offline = value }
        if let node = top["listen"], let items = node.list("a list of listeners") {
            listeners = items.compactMap(Listener.init(node:))
            if items.isEmpty {
                node.report("no listeners; list at least one, or leave listen out for one on 127.0.0.1:3128")
            }
        }
        if let node = top["admin"] { admin = Admin.read(node) }
        if let node = top["cache"] { cache = Cache(node: node) }
        if let node = top["access"] { access = Access(node: node) }
        if let node = top["limits"] { limits = Limits(node: node) }
        if let node = top["log"] { log = Log(node: node) }
        if let node = top["sessions"] { sessions = SessionSettings.readAll(node) }
        if let node = top["hosts"], let items = node.list("a list of host rules") {
            hosts = items.compactMap(HostRule.init(node:))
        }
        if let node = top["interception"] { interception = Interception(node: node) }
    }
}

extension PolicyConfiguration.Address {
    /// Reads `HOST:PORT` and records it for the one-listener-per-address check.
    static func read(_ node: ConfigNode) -> PolicyConfiguration.Address? {
        guard let text = node.nonEmptyString("an address HOST:PORT") else { return nil }
        do {
            let address = try PolicyConfiguration.Address.parse(text)
            node.context.addresses.append((address, node.line, node.path))
            return address
        } catch {
            node.report("bad address \(error.description)")
            return nil
        }
    }
}

extension PolicyConfiguration.Listener {
    /// Reads one entry of `listen`.
    ///
    /// ## Configuration keys:
    /// | key | type | default |
    /// |---|---|---|
    /// | `address` | `HOST:PORT`, `[IPv6]:PORT` | required |
    /// | `mode` | `forward` \| `reverse` | `forward` |
    /// | `upstream` | `http(s)://HOST[:PORT]` | required for reverse, refused for forward |
    /// | `tls` | `{ certificate, key }` or `{ certificates: [{ certificate, key }] }`, `min-version`, `client-auth` (``TLS``) | none: plain HTTP |
    /// | `h2c` | boolean | `false` |
    /// | `proxy-protocol` | boolean | `false` |
    /// | `throttle` | `{ download, upload, latency }` (``Throttle``) | none |
    /// | `max-connections` | 1…1,000,000 | none |
    init?(node: ConfigNode) {
        let keys = ["address", "mode", "upstream", "tls", "h2c", "proxy-protocol", "throttle", "max-connections"]
        guard let entry = node.mapping(keys: keys) else { return nil }
        let address = entry.required("address").flatMap(PolicyConfiguration.Address.read)
        let mode = entry["mode"].map { $0.choice(Mode.self) } ?? .forward
        var upstream: HTTPURL?
        if let upstreamNode = entry["upstream"], let text = upstreamNode.nonEmptyString("a URL") {
            upstream = PolicyConfiguration.Listener.readUpstream(text, upstreamNode)
            if mode == .forward {
                upstreamNode.report("only a reverse listener has an upstream; remove it or set mode: reverse")
            }
        } else if mode == .reverse, entry["upstream"] == nil {
            node.report("a reverse listener needs \"upstream\", the origin every request goes to")
        }
        var tls: TLS?
        if let tlsNode = entry["tls"] {
            guard let read = TLS(node: tlsNode, mode: mode ?? .forward) else { return nil }
            tls = read
        }
        guard let address, let mode else { return nil }
        self.init(address: address, mode: mode, upstream: upstream, tls: tls)
        if let value = entry["h2c"]?.bool() { h2c = value }
        if let flagNode = entry["proxy-protocol"], let value = flagNode.bool() {
            proxyProtocol = value
            if value { node.context.proxyProtocolUses.append((flagNode.line, flagNode.path)) }
        }
        if let throttleNode = entry["throttle"] { throttle = Throttle(node: throttleNode) }
        if let value = entry["max-connections"]?.int(in: 1...1_000_000) { maxConnections = value }
    }

    private static func readUpstream(_ text: String, _ node: ConfigNode) -> HTTPURL? {
        do {
            let url = try HTTPURL.parse(text)
            guard url.scheme == "http" || url.scheme == "https" else {
                node.report("bad upstream \"\(text)\": the scheme must be http or https")
                return nil
            }
            guard url.pathAndQuery == "/" else {
                node.report("bad upstream \"\(text)\": an upstream is an origin, scheme://HOST[:PORT], without a path")
                return nil
            }
            return url
        } catch {
            node.report("bad upstream \"\(text)\": \(error.description)")
            return nil
        }
    }
}

extension PolicyConfiguration.Admin {
    /// Reads `admin`; nil when it has no address.
    ///
    /// ## Configuration keys:
    /// | key | type | default |
    /// |---|---|---|
    /// | `address` | `HOST:PORT` | none: no admin listener |
    static func read(_ node: ConfigNode) -> PolicyConfiguration.Admin? {
        guard let entry = node.mapping(keys: ["address"]) else { return nil }
        return entry["address"].flatMap(PolicyConfiguration.Address.read).map(PolicyConfiguration.Admin.init)
    }
}

extension PolicyConfiguration.Cache {
    /// Reads `cache`.
    ///
    /// ## Configuration keys:
    /// | key | type | default |
    /// |---|---|---|
    /// | `path` | directory | `$XDG_CACHE_HOME/tollgate`, else `~/.cache/tollgate` |
    /// | `max-size` | size | `1GiB` |
    /// | `kind` | `shared` \| `private` | `shared` |
    /// | `set-cookie` | `strip` \| `store` | `strip` |
    /// | `targeted-fields` | list of field names | `[Tollgate-Cache-Control, CDN-Cache-Control]` with a reverse listener, else `[]` |
    /// | `range-offset-limit` | size, `0` or `none` | `0` |
    /// | `read-only` | bool | `false` |
    /// | `max-variants` | integer 1…1000 | `16` |
    /// | `tag-header` | a field name | none |
    init(node: ConfigNode) {
        self.init()
        guard
            let entry = node.mapping(keys: [
                "path", "max-size", "kind", "targeted-fields", "set-cookie", "range-offset-limit", "read-only", "max-variants", "tag-header",
            ])
        else {
            return
        }
        if let node = entry["tag-header"], let name = node.nonEmptyString("a field name such as Surrogate-Key"),
            node.acceptsHeaderName(name, reserved: Self.reservedTagHeaders, refusal: "carries the response's own meaning and cannot hold tags")
        {
            tagHeader = name
        }
        if let value = entry["read-only"]?.bool() { readOnly = value }
        if let value = entry["max-variants"]?.int(in: 1...1000) { maxVariants = value }
        if let limit = entry["range-offset-limit"] {
            switch limit.string("a size, 0 or none") {
            case "none": rangeOffsetLimit = nil
            case "0": rangeOffsetLimit = 0
            case .some: if let size = limit.size() { rangeOffsetLimit = size }
            case nil: break
            }
        }
        if let choice = entry["set-cookie"]?.choice(SetCookie.self) { setCookie = choice }
        if let items = entry["targeted-fields"]?.scalarOrList("a list of field names") {
            targetedFields = items.compactMap { item -> String? in
                guard let name = item.nonEmptyString("a field name such as CDN-Cache-Control") else { return nil }
                guard name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && !"()<>@,;:\\\"/[]?={}".utf8.contains($0) }) else {
                    item.report("\"\(name)\" is not a field name")
                    return nil
                }
                return name
            }
        }
        if let path = entry["path"]?.nonEmptyString("a directory path") { self.path = node.context.resolve(path) }
        if let size = entry["max-size"]?.size() { maxSize = size }
        if let kind = entry["kind"]?.choice(Kind.self) { self.kind = kind }
    }
}

extension PolicyConfiguration.Cache {
    /// Fields `tag-header` may not name: it is removed from what clients get, and these frame a
    /// response, are the proxy's own, or decide how it is cached and read.
    static let reservedTagHeaders = HostRule.HeaderEdits.reservedInResponses.union([
        "cache-control", "expires", "age", "date", "etag", "last-modified", "vary", "content-type", "content-encoding",
        "content-range", "location", "set-cookie", "www-authenticate",
    ])
}

extension PolicyConfiguration.Interception {
    /// Reads `interception`.
    ///
    /// ## Configuration keys:
    /// | key | type | default |
    /// |---|---|---|
    /// | `ca-dir` | directory | `$XDG_DATA_HOME/tollgate/ca`, else `~/.local/share/tollgate/ca` |
    init(node: ConfigNode) {
        self.init()
        guard let entry = node.mapping(keys: ["ca-dir"]) else { return }
        if let path = entry["ca-dir"]?.nonEmptyString("a directory path") { caDirectory = node.context.resolve(path) }
    }
}

extension PolicyConfiguration.Limits {
    /// Reads `limits`.
    ///
    /// ## Configuration keys:
    /// | key | type | default |
    /// |---|---|---|
    /// | `max-header-bytes` | size | `64KiB` |
    /// | `max-headers` | integer 1…10000 | `100` |
    /// | `header-read-timeout` | duration | `10s` |
    /// | `client-idle-timeout` | duration | `15s` |
    /// | `client-send-timeout` | duration | `60s` |
    /// | `upstream-timeout` | duration | `10s` |
    /// | `websocket-max-message` | size, 1 byte…1GiB | `16MiB` |
    /// | `websocket-idle-timeout` | duration | `10m` |
    /// | `tunnel-idle-timeout` | duration | `15m` |
    /// | `http2-max-concurrent-streams` | integer 1…10000 | `100` |
    /// | `http2-max-header-list-size` | size, 1KiB…16MiB | `64KiB` |
    /// | `http2-max-resets` | integer 1…100000, per 30 s | `200` |
    /// | `resendable-body` | size, 0…16GiB | `64MiB` |
    init(node: ConfigNode) {
        self.init()
        let keys = [
            "max-header-bytes", "max-headers", "header-read-timeout", "client-idle-timeout", "client-send-timeout", "upstream-timeout",
            "websocket-max-message", "websocket-idle-timeout", "tunnel-idle-timeout", "http2-max-concurrent-streams",
            "http2-max-header-list-size", "http2-max-resets", "resendable-body",
        ]
        guard let entry = node.mapping(keys: keys) else { return }
        if let sizeNode = entry["max-header-bytes"], let size = sizeNode.size() {
            if size > 16 << 20 {
                sizeNode.report("at most 16MiB")
            } else {
                maxHeaderBytes = Int(size)
            }
        }
        if let count = entry["max-headers"]?.int(in: 1...10_000) { maxHeaders = count }
        if let value = entry["header-read-timeout"]?.duration() { headerReadTimeout = value }
        if let value = entry["client-idle-timeout"]?.duration() { clientIdleTimeout = value }
        if let value = entry["client-send-timeout"]?.duration() { clientSendTimeout = value }
        if let value = entry["upstream-timeout"]?.duration() { upstreamTimeout = value }
        if let sizeNode = entry["websocket-max-message"], let size = sizeNode.size() {
            if size < 1 || size > 1 << 30 {
                sizeNode.report("between 1 byte and 1GiB")
            } else {
                websocketMaxMessage = Int(size)
            }
        }
        if let value = entry["websocket-idle-timeout"]?.duration() { websocketIdleTimeout = value }
        if let value = entry["tunnel-idle-timeout"]?.duration() { tunnelIdleTimeout = value }
        if let count = entry["http2-max-concurrent-streams"]?.int(in: 1...10_000) { http2MaxConcurrentStreams = count }
        if let sizeNode = entry["http2-max-header-list-size"], let size = sizeNode.size() {
            if size < 1 << 10 || size > 16 << 20 {
                sizeNode.report("between 1KiB and 16MiB")
            } else {
                http2MaxHeaderListSize = Int(size)
            }
        }
        if let count = entry["http2-max-resets"]?.int(in: 1...100_000) { http2MaxResets = count }
        if let sizeNode = entry["resendable-body"], let size = sizeNode.size() {
            if size > 16 << 30 {
                sizeNode.report("at most 16GiB")
            } else {
                resendableBody = Int64(size)
            }
        }
    }
}

extension PolicyConfiguration.Log {
    /// Reads `log`.
    ///
    /// ## Configuration keys:
    /// | key | type | default |
    /// |---|---|---|
    /// | `access` | `stderr` \| `stdout` \| `off` \| file path | `stderr` |
    /// | `format` | `combined` \| `json` | `combined` |
    /// | `level` | `trace` \| `debug` \| `info` \| `notice` \| `warning` \| `error` \| `critical` | `info` |
    /// | `har-entries` | integer, 0 to 1,000,000 (0: none kept) | `1000` |
    init(node: ConfigNode) {
        self.init()
        guard let entry = node.mapping(keys: ["access", "format", "level", "har-entries"]) else { return }
        if let accessNode = entry["access"] {
            // YAML 1.1 reads a plain `off` or `no` as false; both mean off here.
            if accessNode.tagName == .bool, accessNode.node.bool == false {
                access = .off
            } else if let text = accessNode.nonEmptyString("stderr, stdout, off or a file path") {
                switch text {
                case "stderr": access = .standardError
                case "stdout": access = .standardOutput
                case "off": access = .off
                default: access = .file(node.context.resolve(text))
                }
            }
        }
        if let format = entry["format"]?.choice(Format.self) { self.format = format }
        if let level = entry["level"]?.choice(Level.self) { self.level = level }
        if let harEntries = entry["har-entries"]?.int(in: 0...1_000_000) { self.harEntries = harEntries }
    }
}
