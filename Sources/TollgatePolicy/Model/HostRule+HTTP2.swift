extension HostRule {
    /// Whether the session's connections to a host's https origin offer HTTP/2 (`hosts[].http2`).
    public enum HTTP2Use: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
        /// ALPN offers `h2, http/1.1`: the origin chooses.
        case auto
        /// ALPN offers `http/1.1` only.
        case off

        public var description: String { rawValue }
    }
}
