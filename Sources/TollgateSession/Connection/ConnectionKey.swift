/// What makes two requests able to share a connection: the address connected to and the scheme.
struct ConnectionKey: Hashable, Sendable, CustomStringConvertible {
    /// `http` or `https` (of the origin, even when connecting through a proxy).
    var scheme: String
    /// The host the TCP connection goes to (the proxy's when there is one).
    var host: String
    /// The port the TCP connection goes to.
    var port: Int
    /// Whether `host:port` is an upstream proxy rather than the origin (plain HTTP through a proxy:
    /// requests in absolute form).
    var viaProxy: Bool
    /// For https through an upstream proxy: the proxy the TCP connection goes to, carrying a
    /// `CONNECT` tunnel to the origin `host:port` (TLS and requests are then the origin's).
    var tunnelVia: UpstreamProxy? = nil
    /// Whether TLS offers `h2` by ALPN (data tasks to https origins; not WebSockets, which need the
    /// connection itself). The origin may still answer `http/1.1`, or the host's rules switch h2 off.
    var offersHTTP2 = false

    var description: String {
        if let tunnelVia { return "\(scheme)://\(host):\(port) (tunnel via \(tunnelVia.host):\(tunnelVia.port))" }
        return "\(scheme)://\(host):\(port)\(viaProxy ? " (proxy)" : "")"
    }
}
