public import NIOCore
import NIOConcurrencyHelpers
public import TollgatePolicy

/// The destination rules (``DestinationCheck``) as a session's
/// `SessionConfiguration.connectionAddressCheck`: the pool asks it about every address it is about
/// to connect to, so a plain request whose name resolves to a denied address only when the session
/// looks it up (DNS rebinding, between the proxy's check and the connection) is refused too.
///
/// The rules are read when each address is checked: a reload applies at once.
public final class SessionAddressCheck: Sendable {
    /// Where the rules come from. A class around the closure, not the closure itself in the
    /// box: `withLockedValue` hands its value `inout`, and a function value passed `inout` out of
    /// a generic box is re-wrapped in two conversion thunks each time — kept, since the value is
    /// written back — so every check made the next one slower (the chain grew by two a
    /// connection, to 300 µs of CPU a request after a few thousand failed upstream connections).
    private final class RulesSource: Sendable {
        let rules: @Sendable () -> PolicyConfiguration.Access
        init(_ rules: @escaping @Sendable () -> PolicyConfiguration.Access) { self.rules = rules }
    }

    private let access: NIOLockedValueBox<RulesSource?>
    private let ownListeners: OwnListeners
    private let resolver = AddressResolver()

    /// A check against the rules `access` returns (set later with ``readRules(from:)`` when the
    /// policy is created after the sessions' configurations are prepared) and the proxy's own
    /// listeners.
    public init(ownListeners: OwnListeners, access: (@Sendable () -> PolicyConfiguration.Access)? = nil) {
        self.ownListeners = ownListeners
        self.access = NIOLockedValueBox(access.map(RulesSource.init))
    }

    /// Reads the rules from `policy` from now on.
    public func readRules(from policy: any ProxyPolicy) {
        let source = RulesSource { policy.configuration.access }
        access.withLockedValue { $0 = source }
    }

    /// Why `address` (resolved from `host`) may not be connected to on `port`, or nil.
    public func refusal(host: String, port: Int, address: SocketAddress) -> String? {
        guard let rules = access.withLockedValue({ $0 })?.rules(),
            let bytes = address.networkBytes
        else { return nil }
        let canonical: CanonicalHost
        do throws(CanonicalHost.Invalid) {
            canonical = try CanonicalHost.parse(host)
        } catch {
            return error.description
        }
        let check = DestinationCheck(access: rules, ownListeners: ownListeners, resolver: resolver)
        if case .denied(let why) = check.decide(host: canonical, address: bytes, port: port) {
            return "\(why) (resolved to \(address.ipAddress ?? "?"))"
        }
        return nil
    }

    /// ``refusal(host:port:address:)`` as the session configuration's closure.
    public var sessionCheck: @Sendable (String, Int, SocketAddress) -> String? {
        { [self] host, port, address in refusal(host: host, port: port, address: address) }
    }
}
