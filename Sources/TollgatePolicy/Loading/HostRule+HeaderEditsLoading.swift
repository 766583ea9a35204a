import TollgateHTTP

extension HostRule.HeaderEdits {
    /// Fields of a request the proxy writes itself or reads to frame and route it, which a rule
    /// may not change: the framing and hop-by-hop fields, `Host` (the session derives it from the
    /// URL; `connect-to` changes where it goes), `Via` and `CDN-Loop` (loop detection), `Expect`.
    static let reservedInRequests: Set<String> = [
        "host", "content-length", "transfer-encoding", "connection", "upgrade", "te", "trailer", "keep-alive",
        "proxy-connection", "proxy-authorization", "proxy-authenticate", "expect", "via", "cdn-loop",
    ]
    /// Fields of a response the proxy writes itself or frames it by: the framing and hop-by-hop
    /// fields, `Via` and `Cache-Status` (the proxy's own lines).
    static let reservedInResponses: Set<String> = [
        "content-length", "transfer-encoding", "connection", "upgrade", "trailer", "keep-alive", "proxy-connection",
        "proxy-authenticate", "via", "cache-status",
    ]

    /// Reads `request-headers` or `response-headers`: `set` and `add` mappings of names to
    /// values, `remove` a name or a list of them; none of `reserved` (lower case, written by `setter`).
    init(node: ConfigNode, reserved: Set<String>, by setter: String) {
        self.init()
        guard let entry = node.mapping(keys: ["set", "add", "remove"]) else { return }
        if let setNode = entry["set"] {
            set = setNode.headerFields(reserved: reserved, by: setter).map { Field(name: $0.name, value: $0.value) }
        }
        if let addNode = entry["add"] {
            add = addNode.headerFields(reserved: reserved, by: setter).map { Field(name: $0.name, value: $0.value) }
        }
        if let removeNode = entry["remove"], let items = removeNode.scalarOrList("a header field name or a list of them") {
            for item in items {
                guard let name = item.nonEmptyString("a header field name"),
                    item.acceptsHeaderName(name, reserved: reserved, refusal: "is written by \(setter) and cannot be removed")
                else { continue }
                remove.append(name)
            }
        }
        if isEmpty, entry.entries.isEmpty { node.report("give set, add or remove (or leave it out)") }
    }
}
