import Foundation

extension PolicyConfiguration.Access {
    /// Reads `access`.
    ///
    /// ## Configuration keys:
    /// | key | type | default |
    /// |---|---|---|
    /// | `clients` | list of CIDRs | `["127.0.0.0/8", "::1/128"]` |
    /// | `connect-ports` | list of ports | `[443]` |
    /// | `destinations` | list of `{ allow: TARGET }` / `{ deny: TARGET }` | none: every destination |
    /// | `users` | list of `{ name, password-file }` | none: no proxy authentication |
    /// | `trusted-forwarders` | list of CIDRs | none: no client's forwarding fields are kept |
    /// | `rate-limit` | `{ rate: N/s \| N/m, burst: N }` | none: no limit |
    /// | `purge-clients` | list of CIDRs | none: `PURGE` is forwarded as any method |
    /// | `connection-limit` | 1…1,000,000 | none: no limit |
    init(node: ConfigNode) {
        self.init()
        let keys = [
            "clients", "connect-ports", "destinations", "users", "trusted-forwarders", "rate-limit", "purge-clients", "connection-limit", "ipv6-client-prefix",
        ]
        guard let entry = node.mapping(keys: keys) else { return }
        if let cidrs = entry["clients"].flatMap(Self.readCIDRs) { clients = cidrs }
        if let cidrs = entry["trusted-forwarders"].flatMap(Self.readCIDRs) { trustedForwarders = cidrs }
        if let cidrs = entry["purge-clients"].flatMap(Self.readCIDRs) { purgeClients = cidrs }
        if let items = entry["connect-ports"]?.scalarOrList("a list of ports") {
            connectPorts = items.compactMap { $0.int(in: 1...65535) }
        }
        if let items = entry["destinations"]?.list("a list of { allow: … } or { deny: … }") {
            destinations = items.compactMap(PolicyConfiguration.DestinationRule.init(node:))
        }
        if let limitNode = entry["rate-limit"] { rateLimit = RateLimit(node: limitNode) }
        if let value = entry["connection-limit"]?.int(in: 1...1_000_000) { connectionLimit = value }
        if let value = entry["ipv6-client-prefix"]?.int(in: 1...128) { ipv6ClientPrefix = value }
        if let items = entry["users"]?.list("a list of users") {
            var names: [String: Int] = [:]
            users = items.compactMap { item -> User? in
                guard let user = User(node: item) else { return nil }
                if let first = names[user.name] {
                    item.report("user \"\(user.name)\" is already listed at line \(first)")
                    return nil
                }
                names[user.name] = item.line
                return user
            }
        }
    }

    /// A list of CIDRs (or one), each problem reported on its item.
    private static func readCIDRs(_ node: ConfigNode) -> [CIDR]? {
        guard let items = node.scalarOrList("a list of CIDRs") else { return nil }
        return items.compactMap { item -> CIDR? in
            guard let text = item.nonEmptyString("a CIDR such as 10.0.0.0/8") else { return nil }
            do throws(CIDR.ParseError) {
                return try CIDR.parse(text)
            } catch {
                item.report(error.description)
                return nil
            }
        }
    }
}

extension PolicyConfiguration.Access.User {
    /// Reads one entry of `access.users`.
    ///
    /// ## Configuration keys:
    /// | key | type | default |
    /// |---|---|---|
    /// | `name` | string without `:` | required |
    /// | `password-file` | file path | required |
    init?(node: ConfigNode) {
        guard let entry = node.mapping(keys: ["name", "password-file"]) else { return nil }
        var name = entry.required("name")?.nonEmptyString()
        if let text = name, text.contains(":") {
            entry["name"]?.report("a Basic authentication user name cannot contain \":\"")
            name = nil
        }
        let file = entry.required("password-file")?.readableFile()
        guard let name, let file else { return nil }
        self.init(name: name, passwordFile: file)
    }
}

extension PolicyConfiguration.DestinationRule {
    /// Reads one entry of `access.destinations`: exactly one of `allow` and `deny`, whose value is
    /// `all`, a CIDR or address with optional `:port`, or a host pattern.
    init?(node: ConfigNode) {
        guard let entry = node.mapping(keys: ["allow", "deny"]) else { return nil }
        guard entry.entries.count == 1, let (key, valueNode) = entry.entries.first,
            let action = Action(rawValue: key)
        else {
            if entry.entries.count > 1 { node.report("give either allow or deny, not both") }
            if entry.entries.isEmpty { node.report("expected { allow: TARGET } or { deny: TARGET }") }
            return nil
        }
        guard let text = valueNode.nonEmptyString("all, a CIDR or a host pattern") else { return nil }
        do {
            self.init(action, try Target.parse(text))
        } catch {
            valueNode.report("\(error)")
            return nil
        }
    }
}

extension PolicyConfiguration.Access.RateLimit {
    /// Reads `access.rate-limit`: `rate` (`N/s` or `N/m`, N a positive number, at most 1,000,000
    /// a second) is required, `burst` (0 to 1,000,000) defaults to 0.
    init?(node: ConfigNode) {
        guard let entry = node.mapping(keys: ["rate", "burst"]) else { return nil }
        guard let rateNode = entry.required("rate"), let text = rateNode.nonEmptyString("a rate such as 20/s or 600/m") else { return nil }
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let count = Double(parts[0].trimmingCharacters(in: .whitespaces)), count > 0, count.isFinite,
            let unit = ["s": 1.0, "m": 60.0][parts[1].trimmingCharacters(in: .whitespaces)], count / unit <= 1_000_000
        else {
            rateNode.report("'\(text)' is not a rate: a positive number of requests per second or minute, such as 20/s or 600/m")
            return nil
        }
        var burst = 0
        if let burstNode = entry["burst"] {
            guard let value = burstNode.int(in: 0...1_000_000) else { return nil }
            burst = value
        }
        self.init(requestsPerSecond: count / unit, burst: burst)
    }
}
