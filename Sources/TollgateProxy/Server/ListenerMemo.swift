import NIOConcurrencyHelpers

/// What a listener's connections share of what each would otherwise work out for its first
/// request: the exchange rules in force and the last route the policy gave.
///
/// Each connection keeps its own (``ConnectionMemo``) for its next requests; a new connection
/// takes the listener's when it still holds instead of deriving it anew — the rules cost about
/// 3 200 instructions and the route 1 400, on every connection of a client that connects per
/// request. Both are immutable once made, so handing one to another event loop is a retain.
final class ListenerMemo: Sendable {
    private struct Kept {
        /// The rules last made for a forward listener's connections and for the others (an
        /// intercepted connection runs in its forward listener's environment, without the
        /// forward listener's proxy authentication: the two differ).
        var forwardRules: ExchangeRules?
        var otherRules: ExchangeRules?
        var route: KeptRoute?
    }

    private let kept = NIOLockedValueBox(Kept())

    /// A memo with nothing kept.
    init() {}

    /// The rules in force for an exchange in `environment`: the ones kept for its kind of
    /// listener while the policy's generation stays, else made now and kept.
    func exchangeRules(_ environment: ListenerEnvironment) -> ExchangeRules {
        let generation = environment.policy.generation
        let slot: WritableKeyPath<Kept, ExchangeRules?>
        if case .forward = environment.mode { slot = \.forwardRules } else { slot = \.otherRules }
        let found = kept.withLockedValue { $0[keyPath: slot] }
        if let found, found.generation == generation { return found }
        let fresh = ExchangeRules(environment)
        kept.withLockedValue { kept in
            // A reload between the two reads keeps the newer rules.
            if (kept[keyPath: slot]?.generation ?? .min) <= fresh.generation { kept[keyPath: slot] = fresh }
        }
        return fresh
    }

    /// The route kept for `host:port`, when it answers under `generation` now.
    func route(host: String, port: Int, generation: Int) -> KeptRoute? {
        let found = kept.withLockedValue { $0.route }
        guard let found, found.answers(host: host, port: port, generation: generation) else { return nil }
        return found
    }

    /// Keeps `route` as the last one the policy gave.
    func keep(_ route: KeptRoute) {
        kept.withLockedValue { $0.route = route }
    }
}
