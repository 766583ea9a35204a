public import TollgateHTTP

/// A stored response chosen to be served, with what serving it needs.
public struct CacheHit: Sendable, Hashable {
    /// The stored response.
    public var stored: StoredResponse
    /// Its freshness at decision time.
    public var freshness: Freshness
    /// Fields a `no-cache="…"` directive lists: not served from the cache without
    /// validation (§5.2.2.4), so left out of ``responseHead``. Lowercased.
    public var withheldFields: [String]

    /// Creates a hit.
    public init(stored: StoredResponse, freshness: Freshness, withheldFields: [String] = []) {
        self.stored = stored
        self.freshness = freshness
        self.withheldFields = withheldFields
    }

    /// Whether the response is stale.
    public var isStale: Bool { !freshness.isFresh }

    /// The head to send: the stored fields with Age set to the current age (a cache must
    /// send Age with a stored response, §5.1) and withheld fields removed.
    public var responseHead: HTTPResponseHead {
        var head = stored.responseHead
        guard withheldFields.isEmpty else {
            head.headerFields.removeLines { line in withheldFields.contains { line.isNamed($0) } }
            head.headerFields.replaceOrAdd(name: .age, value: String(freshness.ageFieldValue))
            return head
        }
        // The usual case: the same fields for every hit of the entry within a second.
        head.headerFields = ServedFieldsMemo.fields(head.headerFields, age: freshness.ageFieldValue)
        return head
    }
}
