/// Where a connection for a host is made instead of that host's own addresses: a host (an IP
/// address or a name, looked up as usual) and a port. The request keeps its URL: the `Host`
/// field, the TLS server name, the certificate's checked name and the cache key stay the URL's
/// host (curl's `--connect-to`, nginx's `upstream` servers).
public struct ConnectionTarget: Hashable, Sendable, CustomStringConvertible {
    /// An IP address (IPv6 without brackets) or a host name.
    public var host: String
    /// The TCP port.
    public var port: Int

    /// Creates a target.
    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// `HOST:PORT`, an IPv6 address in brackets.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
