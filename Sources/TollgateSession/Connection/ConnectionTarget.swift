/// Where a connection for a host is made instead of that host's own addresses: a host (an IP
/// address or a name, looked up as usual) and a port. The request keeps its URL: the `Host`
/// field, the TLS server name, the certificate's checked name and the cache key stay the URL's
/// host (curl's `--connect-to`, nginx's `upstream` servers).
///
/// A target is its address: two with the same host and port are equal whatever their
/// ``weight`` and ``isBackup`` say, so that what is known of a backend's health is one record
/// however the rules list it.
public struct ConnectionTarget: Hashable, Sendable, CustomStringConvertible {
    /// An IP address (IPv6 without brackets) or a host name.
    public var host: String
    /// The TCP port.
    public var port: Int
    /// How many of a round's new connections go to this target among the others of its kind
    /// (nginx's `weight=`, HAProxy's `weight`): 1 to 256. Default: 1.
    public var weight: Int
    /// Whether the target gets connections only when no other target can be connected to
    /// (nginx's and HAProxy's `backup`). Default: false.
    public var isBackup: Bool

    /// Creates a target.
    public init(host: String, port: Int, weight: Int = 1, isBackup: Bool = false) {
        self.host = host
        self.port = port
        self.weight = weight
        self.isBackup = isBackup
    }

    /// `HOST:PORT`, an IPv6 address in brackets: the target's name in logs, metrics and errors.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// As written in `connect-to`: `HOST:PORT`, then `weight=N` when not 1 and `backup`.
    public var ruleDescription: String {
        description + (weight == 1 ? "" : " weight=\(weight)") + (isBackup ? " backup" : "")
    }

    public static func == (lhs: ConnectionTarget, rhs: ConnectionTarget) -> Bool {
        lhs.host == rhs.host && lhs.port == rhs.port
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(host)
        hasher.combine(port)
    }
}
