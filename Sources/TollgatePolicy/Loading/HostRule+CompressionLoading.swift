import Yams

extension HostRule.Compression {
    /// Reads `hosts[].compress`: `true` (the defaults), `false` (none), or a mapping; nil for
    /// none or problems (each reported at its line).
    ///
    /// ## Configuration keys:
    /// | key | type | default |
    /// |---|---|---|
    /// | `types` | list of media types | ``defaultTypes`` |
    /// | `min-size` | size, or `0` | `1KiB` |
    /// | `level` | integer 1…9 | `6` |
    static func read(_ node: ConfigNode) -> HostRule.Compression? {
        if case Node.scalar = node.node {
            return node.bool() == true ? HostRule.Compression() : nil
        }
        guard let entry = node.mapping(keys: ["types", "min-size", "level", "br-level", "encodings"]) else { return nil }
        var compression = HostRule.Compression()
        if let items = entry["types"]?.scalarOrList("a list of media types such as text/html") {
            compression.types = items.compactMap { item -> String? in
                guard let text = item.nonEmptyString("a media type such as text/html") else { return nil }
                let parts = text.split(separator: "/", omittingEmptySubsequences: false)
                guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty && !$0.contains(where: { $0 == ";" || $0 == " " || $0 == "*" }) }) else {
                    item.report("\"\(text)\" is not a media type: TYPE/SUBTYPE without parameters or *, such as application/json")
                    return nil
                }
                return text.lowercased()
            }
            if items.isEmpty { entry["types"]?.report("list at least one media type (or set compress: false)") }
        }
        if let sizeNode = entry["min-size"] {
            if case Node.scalar(let scalar) = sizeNode.node, scalar.string == "0" {
                compression.minimumSize = 0
            } else if let size = sizeNode.size() {
                compression.minimumSize = size
            }
        }
        if let level = entry["level"]?.int(in: 1...9) { compression.level = level }
        if let level = entry["br-level"]?.int(in: 0...11) { compression.brotliLevel = level }
        if let items = entry["encodings"]?.scalarOrList("a list of content codings: br, gzip") {
            var encodings: [String] = []
            for item in items {
                guard let name = item.nonEmptyString("br or gzip")?.lowercased() else { continue }
                guard ["br", "gzip"].contains(name) else {
                    item.report("\"\(name)\" is not a coding the proxy makes: br or gzip")
                    continue
                }
                if !encodings.contains(name) { encodings.append(name) }
            }
            if items.isEmpty { entry["encodings"]?.report("list br, gzip or both (or set compress: false)") }
            if !encodings.isEmpty { compression.encodings = encodings }
        }
        return compression
    }
}
