import NIOCore
import TollgatePolicy

/// Decides whether a request or tunnel may go to a host and port (`access.destinations`), on
/// the addresses the host resolves to, before any connection is made.
///
/// The order:
/// 1. the proxy's own listeners are always denied (``OwnListeners``);
/// 2. the first rule of `access.destinations` that matches decides; a host-name rule matches the
///    canonical name (``CanonicalHost``), a network rule the resolved address;
/// 3. with no rules, everything is allowed; with rules and none matching, it is denied;
/// 4. link-local addresses (`169.254.0.0/16`, where cloud metadata services live, and
///    `fe80::/10`) are denied unless the deciding rule is an explicit network rule allowing
///    them: `allow: all` or a host pattern does not open them.
///
/// A name is allowed only when every address it resolves to is, so a name that resolves to a
/// public and a private address cannot slip through on the first; the tunnel then connects to
/// the checked address itself.
final class DestinationCheck: Sendable {
    /// The outcome.
    enum Verdict: Sendable, Equatable {
        /// Go ahead; `address` is the first resolved address (checked).
        case allowed(address: [UInt8])
        /// Refused (403 `host-denied`), with why.
        case denied(String)
        /// The name did not resolve (502 `upstream-unreachable`).
        case unresolvable(String)
    }

    /// `169.254.0.0/16`.
    static let linkLocalIPv4 = CIDR("169.254.0.0/16")!
    /// `fe80::/10`.
    static let linkLocalIPv6 = CIDR("fe80::/10")!

    let access: PolicyConfiguration.Access
    let ownListeners: OwnListeners
    let resolver: AddressResolver

    // A class: a connection keeps one (ExchangeRules) and each exchange uses it in place; a
    // struct was copied at each use, retaining every list of the access rules.
    init(access: PolicyConfiguration.Access, ownListeners: OwnListeners, resolver: AddressResolver) {
        self.access = access
        self.ownListeners = ownListeners
        self.resolver = resolver
    }

    /// Resolves `host` and checks every address; `then` gets the verdict on `eventLoop` (at once
    /// for an IP address, after the lookup for a name).
    func check(
        _ host: CanonicalHost,
        port: Int,
        on eventLoop: any EventLoop,
        then: @escaping @Sendable (Verdict) -> Void
    ) {
        if let verdict = verdictWithoutLookup(for: host, port: port) {
            then(verdict)
            return
        }
        check(host, port: port, on: eventLoop).whenSuccess(then)
    }

    /// The verdict for a host that is an address, decided now; nil for a name (it needs a lookup).
    func verdictWithoutLookup(for host: CanonicalHost, port: Int) -> Verdict? {
        host.address.map { decide(host: host, address: $0, port: port) }
    }

    /// The verdict offline, where nothing is looked up or connected to: the rules that match the
    /// name (or the address, when the host is one) refuse what they refuse; anything else passes,
    /// since the request is answered from the cache or not at all.
    func offlineVerdict(for host: CanonicalHost, port: Int) -> Verdict {
        if let address = host.address { return decide(host: host, address: address, port: port) }
        // A name: only a rule that matches the name itself can decide; the first one does.
        let candidate = HostPattern.Candidate(host: host.text)
        for (index, rule) in access.destinations.enumerated() where rule.target.matches(candidate, address: nil, port: port) {
            if case .deny = rule.action {
                return .denied("\(host.forURL):\(port) is denied by access.destinations[\(index)] (\(rule))")
            }
            break
        }
        return .allowed(address: [])
    }

    /// Resolves `host` and checks every address.
    func check(_ host: CanonicalHost, port: Int, on eventLoop: any EventLoop) -> EventLoopFuture<Verdict> {
        resolver.resolve(host, on: eventLoop).map { [self] addresses in
            var first: [UInt8]?
            for address in addresses {
                if case .denied(let why) = decide(host: host, address: address, port: port) { return .denied(why) }
                first = first ?? address
            }
            return first.map { .allowed(address: $0) } ?? .unresolvable("no address for \(host)")
        }.flatMapErrorThrowing { [self] error in
            // A name that does not resolve may still be refused by a host-name rule.
            if case .denied(let why) = decide(host: host, address: nil, port: port) { return .denied(why) }
            return .unresolvable("\(error)")
        }
    }

    /// The decision for one address (nil: the name did not resolve; only name rules can match).
    func decide(host: CanonicalHost, address: [UInt8]?, port: Int) -> Verdict {
        // Formatted only for a denial: an allowed request should not pay for the text.
        var place: String { "\(host.forURL):\(port)" }
        if let address, ownListeners.contains(address: address, port: port) {
            return .denied("\(place) is this proxy's own listener")
        }
        let linkLocal = address.map { Self.linkLocalIPv4.contains($0) || Self.linkLocalIPv6.contains($0) } ?? false
        if !access.destinations.isEmpty {
            // The host is prepared once for all the rules (normalized, tried as an address).
            let candidate = HostPattern.Candidate(host: host.text)
            for (index, rule) in access.destinations.enumerated()
            where rule.target.matches(candidate, address: address, port: port) {
                switch rule.action {
                case .deny:
                    return .denied("\(place) is denied by access.destinations[\(index)] (\(rule))")
                case .allow:
                    var isNetworkRule = false
                    if case .network = rule.target { isNetworkRule = true }
                    if linkLocal, !isNetworkRule {
                        return .denied("\(place) is a link-local address, denied unless a network rule allows it")
                    }
                    return .allowed(address: address ?? [])
                }
            }
            return .denied("\(place) matches no rule of access.destinations")
        }
        if linkLocal {
            return .denied("\(place) is a link-local address (169.254.0.0/16 and fe80::/10 are denied by default)")
        }
        return .allowed(address: address ?? [])
    }
}
