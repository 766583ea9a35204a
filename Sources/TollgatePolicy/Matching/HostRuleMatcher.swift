public import TollgateHTTP

/// Finds the host rule for a request: the first rule, in file order, with a pattern that matches.
///
/// First match, as nginx `server_name` lists and Squid ACLs read: put specific rules before general
/// ones (`api.example.com` before `**.example.com` before `**`). A rule's settings, its pins
/// included, are its own; nothing is merged from later rules that would also have matched.
public struct HostRuleMatcher: Sendable {
    /// The winning rule and what matched.
    public struct Match: Sendable {
        /// The rule's position in `hosts` (0-based, as in `hosts[2]` of a message).
        public let index: Int
        /// The rule.
        public let rule: HostRule
        /// The rule's pattern that matched (a rule may list several).
        public let pattern: HostPattern
    }

    /// The rules, in order.
    public let rules: [HostRule]

    /// A matcher over `rules`, in order.
    public init(rules: [HostRule]) { self.rules = rules }

    /// The first rule matching `host` on `port`, or nil when none does.
    public func firstMatch(host: String, port: Int) -> Match? {
        guard !rules.isEmpty else { return nil }
        let candidate = HostPattern.Candidate(host: host)
        for (index, rule) in rules.enumerated() {
            if let pattern = rule.patterns.first(where: { $0.matches(candidate, port: port) }) {
                return Match(index: index, rule: rule, pattern: pattern)
            }
        }
        return nil
    }

    /// The first rule matching the URL's host and effective port.
    public func firstMatch(for url: HTTPURL) -> Match? {
        firstMatch(host: url.host, port: url.effectivePort)
    }
}
