/// The whole policy file (CONTRACT.md "Configuration file") as typed values.
///
/// Every field starts at the value the file means when the key is left out, so
/// `PolicyConfiguration()` is what an empty file loads to. File parsing lives apart from
/// the model, in ``PolicyLoader``: a configuration built in code (a test, the embedded
/// default) never goes through YAML, and the model carries no line numbers except where
/// a later message needs one (``HostRule/sourceLine``).
///
/// Nested types, one per top-level key: ``Listener`` (`listen`), ``Admin`` (`admin`),
/// ``Cache`` (`cache`), ``Access`` (`access`), ``Limits`` (`limits`), ``Log`` (`log`),
/// ``Interception`` (`interception`); `sessions` are ``SessionSettings`` and `hosts` are
/// ``HostRule``s.
public struct PolicyConfiguration: Hashable, Sendable {
    /// Whether the proxy never touches the network (`offline`): every request is answered from
    /// the cache whatever the age of what is stored, a miss is `504 offline-miss`. Reloadable;
    /// `serve --offline` forces it on. Default: false.
    public var offline = false
    /// The proxy's listeners (`listen`). Default: one forward listener on `127.0.0.1:3128`.
    public var listeners: [Listener] = [Listener(address: Address(host: "127.0.0.1", port: 3128), mode: .forward)]
    /// The admin HTTP listener (`admin`). Default: nil, no admin listener.
    public var admin: Admin?
    /// The response cache (`cache`). Default: ``Cache/init()``, shared, 1 GiB, at the default path.
    public var cache = Cache()
    /// Who may use the proxy and where it may connect (`access`). Default: ``Access/init()``.
    public var access = Access()
    /// Limits on client requests and upstream waits (`limits`). Default: ``Limits/init()``.
    public var limits = Limits()
    /// Logging (`log`). Default: ``Log/init()``, combined access log on standard error, level info.
    public var log = Log()
    /// The named sessions (`sessions`), by name. Always holds ``SessionSettings/defaultName``;
    /// default: only that session, with every field at its default.
    public var sessions: [String: SessionSettings] = [SessionSettings.defaultName: SessionSettings()]
    /// The host rules (`hosts`), in file order; the first rule with a matching pattern wins.
    /// Default: none (every host gets the default session and system trust).
    public var hosts: [HostRule] = []
    /// TLS interception (`interception`). Default: ``Interception/init()``.
    public var interception = Interception()

    /// A configuration with every field at its default (what an empty file means).
    public init() {}

    /// The named session's settings; the `default` session exists even when the file does
    /// not declare it.
    public func session(named name: String) -> SessionSettings? {
        if let settings = sessions[name] { return settings }
        return name == SessionSettings.defaultName ? SessionSettings() : nil
    }

    /// The session names, `default` first, then the others in alphabetical order.
    public var sessionNames: [String] {
        let others = sessions.keys.filter { $0 != SessionSettings.defaultName }.sorted()
        return [SessionSettings.defaultName] + others
    }
}
