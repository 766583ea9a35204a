/// What makes two requests able to share a connection: the address connected to and the scheme.
struct ConnectionKey: Hashable, Sendable, CustomStringConvertible {
    /// `http` or `https` (of the origin, even when connecting through a proxy).
    var scheme: String
    /// The host the TCP connection goes to (the proxy's when there is one).
    var host: String
    /// The port the TCP connection goes to.
    var port: Int
    /// Whether `host:port` is an upstream proxy rather than the origin.
    var viaProxy: Bool

    var description: String { "\(scheme)://\(host):\(port)\(viaProxy ? " (proxy)" : "")" }
}
