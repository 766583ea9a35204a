import NIOCore
import NIOPosix

/// Where a listener binds: a host (an IP address or a name) and a port, written `HOST:PORT`
/// (`[::1]:3128` for IPv6). Port 0 asks the system for any free port.
public struct ListenAddress: Hashable, Sendable, CustomStringConvertible {
    /// The host, without brackets for IPv6 literals.
    public var host: String
    /// The port (0…65535; 0: any free port).
    public var port: Int

    /// The embedded default's forward listener (CONTRACT.md): 127.0.0.1:3128.
    public static let defaultForward = ListenAddress(host: "127.0.0.1", port: 3128)

    /// Creates an address from its parts.
    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Why a `HOST:PORT` text was not accepted.
    public struct ParseError: Error, Hashable, Sendable, CustomStringConvertible {
        /// What is wrong, in one line.
        public let description: String
    }

    /// Parses `HOST:PORT` or `[IPv6]:PORT`.
    public static func parse(_ text: String) throws(ParseError) -> ListenAddress {
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else {
                throw ParseError(description: "'\(text)': unterminated IPv6 literal (expected [ADDRESS]:PORT)")
            }
            host = text[text.index(after: text.startIndex)..<close]
            let after = text[text.index(after: close)...]
            guard after.hasPrefix(":") else {
                throw ParseError(description: "'\(text)': expected HOST:PORT")
            }
            portText = after.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":") else {
                throw ParseError(description: "'\(text)': expected HOST:PORT")
            }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            if host.contains(":") {
                throw ParseError(description: "'\(text)': write an IPv6 address in brackets, [ADDRESS]:PORT")
            }
        }
        guard !host.isEmpty else { throw ParseError(description: "'\(text)': the host is missing") }
        guard !portText.isEmpty, portText.count <= 5, portText.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
            let port = Int(portText), port <= 65535
        else {
            throw ParseError(description: "'\(text)': the port must be a number from 0 to 65535")
        }
        return ListenAddress(host: String(host), port: port)
    }

    /// `HOST:PORT`, IPv6 literals in brackets.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

extension ServerBootstrap {
    /// Binds to `address`: an IP address directly, a name (such as `localhost`) through the
    /// resolver. NIO's `bind(host:port:)` asks getaddrinfo even for an address, which consults
    /// the name service (nscd) — a lookup an offline proxy must not make, not even at start.
    func bind(to address: ListenAddress) -> EventLoopFuture<any Channel> {
        if let socketAddress = try? SocketAddress(ipAddress: address.host, port: address.port) {
            return bind(to: socketAddress)
        }
        return bind(host: address.host, port: address.port)
    }

    /// Serves `socket`, already bound and listening (passed by a service manager,
    /// ``InheritedListeners``), when given; else binds to `address`.
    func bind(to address: ListenAddress, inheriting socket: CInt?) -> EventLoopFuture<any Channel> {
        if let socket { return withBoundSocket(socket) }
        return bind(to: address)
    }
}
