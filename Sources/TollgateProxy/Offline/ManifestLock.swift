public import TollgateCache
public import TollgateHTTP

/// The manifest an offline proxy serves by (`serve --offline --manifest FILE`): only the
/// variants it lists, each checked against the cache when the proxy starts; an entry that
/// failed that check is left out, so its URL is a miss rather than a different artifact.
public struct ManifestLock: Sendable {
    /// The entries served, by cache key.
    private let entriesByKey: [String: [CacheManifest.Entry]]
    /// The entries left out, and why.
    public let problems: [ManifestProblem]

    /// The stored `Content-Type` and `Content-Encoding` of the entries that vary on `Accept` or
    /// `Accept-Encoding`, by identity.
    private let representations: [String: HeaderFields]

    /// The lock of `manifest`, without the entries `problems` names; `representations` are the
    /// stored fields of entries a request with other preferences may be given
    /// (``CacheStore/representations(of:)``).
    public init(_ manifest: CacheManifest, problems: [ManifestProblem], representations: [String: HeaderFields] = [:]) {
        let bad = Set(problems.map(\.entry.identity))
        var byKey: [String: [CacheManifest.Entry]] = [:]
        for entry in manifest.entries where !bad.contains(entry.identity) {
            byKey[entry.key, default: []].append(entry)
        }
        self.entriesByKey = byKey
        self.problems = problems
        self.representations = representations
    }

    /// How many entries are served.
    public var count: Int { entriesByKey.values.reduce(0) { $0 + $1.count } }

    /// The entry a request for the cache key `key` with `headerFields` is served from, or nil:
    /// the one it selects, else one whose stored representation it accepts by `Accept` and
    /// `Accept-Encoding` (``ContentNegotiation``; `negotiated`: the request is then given that
    /// variant's recorded fields for the lookup, ``CacheManifest/Entry/selectVariant(in:)``).
    public func entry(forKey key: String, headerFields: HeaderFields) -> (entry: CacheManifest.Entry, negotiated: Bool)? {
        guard let entries = entriesByKey[key] else { return nil }
        if let selected = entries.first(where: { $0.isSelected(by: headerFields) }) { return (selected, false) }
        let accepted = entries.first { entry in
            representations[entry.identity].map { entry.isAcceptable(to: headerFields, representation: $0) } ?? false
        }
        return accepted.map { ($0, true) }
    }

    /// The problem that left out the entry a request for `key` with `headerFields` would have
    /// been served from, if one did.
    public func problem(forKey key: String, headerFields: HeaderFields) -> ManifestProblem? {
        problems.first { $0.entry.key == key && $0.entry.isSelected(by: headerFields) }
    }
}
