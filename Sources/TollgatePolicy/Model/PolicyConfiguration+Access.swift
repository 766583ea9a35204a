extension PolicyConfiguration {
    /// Who may use the proxy and where it may go (`access`).
    public struct Access: Hashable, Sendable {
        /// A proxy user (an entry of `users`), checked with Basic proxy authentication.
        public struct User: Hashable, Sendable {
            /// The user name (`name`); it may not contain `:` (RFC 7617).
            public var name: String
            /// The file holding the password (`password-file`), its first line; resolved like every path.
            public var passwordFile: String

            /// Creates a user entry.
            public init(name: String, passwordFile: String) {
                self.name = name
                self.passwordFile = passwordFile
            }
        }

        /// The client addresses allowed to connect (`clients`). Default: loopback only,
        /// `127.0.0.0/8` and `::1/128`.
        public var clients: [CIDR] = [CIDR.loopbackIPv4, CIDR.loopbackIPv6]
        /// The ports CONNECT may open tunnels to (`connect-ports`). Default: 443 only.
        public var connectPorts: [Int] = [443]
        /// Where requests and tunnels may go (`destinations`), first match wins. Default: none,
        /// which allows every destination. A non-empty list denies what none of its rules matches.
        public var destinations: [DestinationRule] = []
        /// The proxy users (`users`). Default: none, no proxy authentication.
        public var users: [User] = []
        /// The clients whose forwarding fields (`Forwarded`, `X-Forwarded-For`, `-Host`, `-Proto`,
        /// `-Port`) are passed on (`trusted-forwarders`): a load balancer or proxy in front.
        /// Default: none — every client's are replaced (reverse) or removed (forward), so a client
        /// cannot make an origin that reflects them produce a response stored for everyone.
        public var trustedForwarders: [CIDR] = []
        /// How many requests each client address may make (`rate-limit`, nginx's `limit_req`).
        /// Default: nil, no limit.
        public var rateLimit: RateLimit?
        /// The clients whose `PURGE` requests the proxy answers by removing what it stored
        /// (`purge-clients`: Squid's `http_access allow PURGE`, Varnish's purge ACL). Default: none —
        /// a `PURGE` is forwarded as any other method; once set, a `PURGE` from any other client
        /// is refused (`403 purge-refused`) and never forwarded.
        public var purgeClients: [CIDR] = []
        /// How many connections each client address may have open at once, over all listeners
        /// (`connection-limit`: nginx's `limit_conn` per `$binary_remote_addr`, HAProxy's
        /// `src_conn_cur`). A connection past it has its requests answered
        /// `429 too-many-connections`. Default: nil, no limit.
        public var connectionLimit: Int?
        /// How many leading bits of an IPv6 client address make one client for `rate-limit` and
        /// `connection-limit` (`ipv6-client-prefix`, 1–128): a host holding a /64 could otherwise
        /// take a fresh address, and a fresh limit, for each connection. Default: 64.
        public var ipv6ClientPrefix = 64

        /// `access.rate-limit`: a sustained rate and the burst above it each client address may
        /// make (nginx's `limit_req zone=… rate=R burst=B nodelay`, per `$binary_remote_addr`).
        public struct RateLimit: Hashable, Sendable {
            /// Requests a second, sustained (`rate`: `N/s` or `N/m`).
            public var requestsPerSecond: Double
            /// Requests beyond the rate a client may make at once (`burst`). Default: 0.
            public var burst: Int

            /// A limit of `requestsPerSecond` with `burst` more at once.
            public init(requestsPerSecond: Double, burst: Int = 0) {
                self.requestsPerSecond = requestsPerSecond
                self.burst = burst
            }
        }

        /// An access setting with every field at its default.
        public init() {}

        /// Whether the forwarding fields of a client at `address` are passed on.
        public func trustsForwarding(address: [UInt8]) -> Bool {
            trustedForwarders.contains { $0.contains(address) }
        }

        /// Whether a client at `address` may purge: nil when `purge-clients` is not set (a `PURGE`
        /// is then a method like any other).
        public func allowsPurge(address: [UInt8]) -> Bool? {
            purgeClients.isEmpty ? nil : purgeClients.contains { $0.contains(address) }
        }

        /// Whether a client at `address` (4 or 16 network bytes) may connect.
        public func allowsClient(address: [UInt8]) -> Bool {
            clients.contains { $0.contains(address) }
        }

        /// Whether a request or tunnel may go to `host` (as the client named it) at `address` (its
        /// resolved address, when known) and `port`: the first matching rule decides; with no
        /// rules everything is allowed, and when no rule matches it is denied.
        public func allowsDestination(host: String, address: [UInt8]?, port: Int) -> Bool {
            if destinations.isEmpty { return true }
            for rule in destinations where rule.target.matches(host: host, address: address, port: port) {
                return rule.action == .allow
            }
            return false
        }
    }

    /// One entry of `access.destinations`: `{ allow: TARGET }` or `{ deny: TARGET }`.
    public struct DestinationRule: Hashable, Sendable, CustomStringConvertible {
        /// Allow or deny.
        public enum Action: String, Hashable, Sendable, CaseIterable {
            case allow, deny
        }

        /// What a rule matches.
        public enum Target: Hashable, Sendable, CustomStringConvertible {
            /// Every destination (`all`).
            case all
            /// Resolved addresses in a network, optionally on one port (`10.0.0.0/8`, `10.1.2.3:22`,
            /// `[fd00::/8]:443`).
            case network(CIDR, port: Int?)
            /// Host names matching a pattern (``HostPattern``, optional `:port`).
            case host(HostPattern)

            /// Parses `all`, a CIDR or address with optional `:port`, or a host pattern.
            ///
            /// - Throws: ``CIDR/ParseError`` for text that is meant as an address but is not a
            ///   valid one, ``HostPattern/ParseError`` for a bad host pattern.
            public static func parse(_ text: String) throws -> Target {
                if text == "all" { return .all }
                if let (cidr, port) = try CIDR.parseNetworkWithPort(text) { return .network(cidr, port: port) }
                return .host(try HostPattern(text))
            }

            /// Whether the destination matches.
            public func matches(host: String, address: [UInt8]?, port: Int) -> Bool {
                matches(HostPattern.Candidate(host: host), address: address, port: port)
            }

            /// Whether the destination matches, for a host prepared once for every rule.
            public func matches(_ candidate: HostPattern.Candidate, address: [UInt8]?, port: Int) -> Bool {
                switch self {
                case .all:
                    return true
                case .network(let cidr, let rulePort):
                    if let rulePort, rulePort != port { return false }
                    if let address { return cidr.contains(address) }
                    // A literal address in the request is its own resolution.
                    return candidate.address.map(cidr.contains) ?? false
                case .host(let pattern):
                    return pattern.matches(candidate, port: port)
                }
            }

            public var description: String {
                switch self {
                case .all: "all"
                case .network(let cidr, nil): cidr.description
                case .network(let cidr, let port?):
                    cidr.isIPv6 ? "[\(cidr)]:\(port)" : "\(cidr):\(port)"
                case .host(let pattern): pattern.description
                }
            }
        }

        /// Allow or deny.
        public var action: Action
        /// What it matches.
        public var target: Target

        /// Creates a rule.
        public init(_ action: Action, _ target: Target) {
            self.action = action
            self.target = target
        }

        public var description: String { "\(action.rawValue) \(target)" }
    }
}
