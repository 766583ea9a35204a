public import TollgateHTTP

/// What a listener does with the requests it accepts.
public enum ListenerMode: Hashable, Sendable, CustomStringConvertible {
    /// A forward proxy: clients send absolute-form requests (`GET http://host/path HTTP/1.1`) and
    /// CONNECT; an origin-form request gets 400.
    case forward
    /// A gateway to one origin: clients send origin-form requests (`GET /path HTTP/1.1`), each
    /// goes to `upstream` with `Host` set to the upstream's; CONNECT gets 405.
    case reverse(upstream: HTTPURL)

    /// `forward` or `reverse`, as in the listening line and the configuration file.
    public var description: String {
        switch self {
        case .forward: "forward"
        case .reverse: "reverse"
        }
    }
}
