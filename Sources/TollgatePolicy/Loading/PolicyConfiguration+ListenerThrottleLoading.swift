extension PolicyConfiguration.Listener.Throttle {
    /// Reads `listen[].throttle`; nil when it has problems (each reported at its line).
    ///
    /// ## Configuration keys:
    /// | key | type | default |
    /// |---|---|---|
    /// | `download` | a rate: `SIZE/s` (`256KiB/s`) or `Nkbit/s`, `NMbit/s`, `NGbit/s` | none: not limited |
    /// | `upload` | a rate, as `download` | none: not limited |
    /// | `latency` | a duration (`100ms`), at most 30s | `0ms` |
    init?(node: ConfigNode) {
        guard let entry = node.mapping(keys: ["download", "upload", "latency"]) else { return nil }
        self.init()
        var complete = true
        func rate(_ key: String, maximum: Int64) -> Int64? {
            guard let rateNode = entry[key] else { return nil }
            guard let text = rateNode.nonEmptyString("a rate such as 512KiB/s or 4Mbit/s") else {
                complete = false
                return nil
            }
            guard let value = ConfigValueParsers.byteRate(text) else {
                rateNode.report("'\(text)' is not a rate: a size a second (512KiB/s, 2MiB/s) or bits a second (750kbit/s, 20Mbit/s)")
                complete = false
                return nil
            }
            guard value >= Self.minimumRate, value <= maximum else {
                rateNode.report("must be from \(Self.minimumRate) to \(maximum) bytes a second, not \(value)")
                complete = false
                return nil
            }
            return value
        }
        download = rate("download", maximum: Self.maximumDownload)
        upload = rate("upload", maximum: Int64(Int32.max))
        if let latencyNode = entry["latency"] {
            switch latencyNode.duration(allowZero: true) {
            case let value? where value <= Self.maximumLatency:
                latency = value
            case .some:
                latencyNode.report("must be at most 30s")
                complete = false
            case nil:
                complete = false
            }
        }
        if complete, download == nil, upload == nil, latency == .zero {
            node.report("throttles nothing: give download, upload or latency")
            return nil
        }
        guard complete else { return nil }
    }
}
