public import TollgateHTTP

/// What a listener does with the requests it accepts.
public enum ListenerMode: Hashable, Sendable, CustomStringConvertible {
    /// A forward proxy: clients send absolute-form requests (`GET http://host/path HTTP/1.1`) and
    /// CONNECT; an origin-form request gets 400.
    case forward
    /// A gateway to one origin: clients send origin-form requests (`GET /path HTTP/1.1`), each
    /// goes to `upstream` with `Host` set to the upstream's; CONNECT gets 405.
    case reverse(upstream: HTTPURL)
    /// Not a listener's mode but a connection's: a forward connection whose CONNECT to `origin`
    /// (`https://host:port/`) is intercepted. Inside the client's TLS, origin-form requests go to
    /// `origin`; an absolute-form one must name it; CONNECT gets 405.
    case intercepted(origin: HTTPURL)

    /// `forward`, `reverse` or `intercepted`, as in the listening line and the configuration file.
    public var description: String {
        switch self {
        case .forward: "forward"
        case .reverse: "reverse"
        case .intercepted: "intercepted"
        }
    }
}
