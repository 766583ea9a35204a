/// What a listener does with the requests it accepts.
///
/// Only forward mode exists in this build; reverse mode (CONTRACT.md `mode: reverse`) is added
/// with the configuration file.
public enum ListenerMode: String, Hashable, Sendable, CustomStringConvertible {
    /// A forward proxy: clients send absolute-form requests (`GET http://host/path HTTP/1.1`).
    case forward

    public var description: String { rawValue }
}
