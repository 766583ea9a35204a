public import TollgateHTTP

extension PolicyConfiguration {
    /// A socket address written `HOST:PORT`, or `[IPv6]:PORT`.
    public struct Address: Hashable, Sendable, CustomStringConvertible {
        /// The host: an IP address (IPv6 without brackets) or a name.
        public var host: String
        /// The port, 0…65535; 0 asks the system for any free port.
        public var port: Int

        /// Creates an address from its parts.
        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }

        /// Why a text is not an address; the message quotes it.
        public struct ParseError: Error, Hashable, Sendable, CustomStringConvertible {
            /// What is wrong, in one line.
            public let description: String
        }

        /// Parses `HOST:PORT` or `[IPv6]:PORT`.
        public static func parse(_ text: String) throws(ParseError) -> Address {
            let host: Substring
            let portText: Substring
            if text.hasPrefix("[") {
                guard let close = text.firstIndex(of: "]") else {
                    throw ParseError(
                        description: "\"\(text)\" has an unterminated IPv6 literal; expected [ADDRESS]:PORT"
                    )
                }
                host = text[text.index(after: text.startIndex)..<close]
                let after = text[text.index(after: close)...]
                guard after.hasPrefix(":") else {
                    throw ParseError(description: "\"\(text)\" has no port; expected [ADDRESS]:PORT")
                }
                portText = after.dropFirst()
                guard CIDR.addressBytes(String(host))?.count == 16 else {
                    throw ParseError(description: "\"\(text)\": \"\(host)\" is not an IPv6 address")
                }
            } else {
                guard let colon = text.lastIndex(of: ":") else {
                    throw ParseError(description: "\"\(text)\" has no port; expected HOST:PORT")
                }
                host = text[..<colon]
                portText = text[text.index(after: colon)...]
                if host.contains(":") {
                    throw ParseError(description: "\"\(text)\": write an IPv6 address in brackets, [ADDRESS]:PORT")
                }
            }
            guard !host.isEmpty else { throw ParseError(description: "\"\(text)\" has no host; expected HOST:PORT") }
            guard
                CIDR.addressBytes(String(host)) != nil
                    || host.utf8.allSatisfy({
                        ($0 >= 48 && $0 <= 57) || ($0 | 0x20 >= 97 && $0 | 0x20 <= 122) || $0 == 45 || $0 == 46
                            || $0 == 95
                    })
            else {
                throw ParseError(description: "\"\(text)\": \"\(host)\" is not an IP address or host name")
            }
            guard !portText.isEmpty, portText.count <= 5, portText.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
                let port = Int(portText), port <= 65535
            else {
                throw ParseError(description: "\"\(text)\": the port must be a number from 0 to 65535")
            }
            return Address(host: String(host), port: port)
        }

        /// `HOST:PORT`, IPv6 literals in brackets.
        public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    }

    /// One listening socket (an entry of `listen`).
    public struct Listener: Hashable, Sendable {
        /// What a listener does with the requests it accepts.
        public enum Mode: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
            /// Clients send absolute-form requests and CONNECT (a forward proxy).
            case forward
            /// Clients send origin-form requests; every request goes to ``Listener/upstream``.
            case reverse

            public var description: String { rawValue }
        }

        /// Where to listen (`address`). Required.
        public var address: Address
        /// Forward or reverse (`mode`). Default: forward.
        public var mode: Mode
        /// The origin a reverse listener sends every request to (`upstream`); required for reverse,
        /// refused for forward. Default: nil.
        public var upstream: HTTPURL?
        /// HTTPS on this listener (`tls`): its certificates and lowest version. Default: nil,
        /// plain HTTP.
        public var tls: TLS?
        /// Whether the listener also speaks HTTP/2 with prior knowledge (`h2c`): a connection
        /// whose first bytes are the HTTP/2 preface is served as HTTP/2, any other as HTTP/1.1.
        /// Default: false.
        public var h2c = false
        /// Whether every connection starts with a PROXY protocol header (v1 or v2) from a load
        /// balancer in `access.trusted-forwarders`, whose source address is the client's
        /// (`proxy-protocol`: HAProxy's `accept-proxy`, nginx's `listen … proxy_protocol`).
        /// Default: false.
        public var proxyProtocol = false
        /// A slower network between the listener and its clients (`throttle`): a download and an
        /// upload rate and a latency for each connection. Default: nil, no throttling.
        public var throttle: Throttle?
        /// How many client connections the listener serves at once (`max-connections`: HAProxy's
        /// `maxconn` on a frontend): at the limit it stops accepting, and new connections wait in
        /// the kernel's listen queue until one closes. Default: nil, no limit but the open-file limit.
        public var maxConnections: Int?

        /// Creates a listener.
        public init(address: Address, mode: Mode = .forward, upstream: HTTPURL? = nil, tls: TLS? = nil) {
            self.address = address
            self.mode = mode
            self.upstream = upstream
            self.tls = tls
        }
    }

    /// The admin HTTP API's listener (`admin`).
    public struct Admin: Hashable, Sendable {
        /// Where the admin API listens (`address`). A file that leaves it out has no admin listener.
        public var address: Address

        /// Creates an admin listener setting.
        public init(address: Address) { self.address = address }
    }
}
