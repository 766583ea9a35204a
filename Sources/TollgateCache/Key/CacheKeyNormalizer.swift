/// Rewrites the query of a URL before it becomes a ``CacheKey``, so that URLs the origin
/// treats as the same resource share one cache entry.
///
/// Every option trades correctness for hit rate: two URLs that differ in a dropped or
/// reordered parameter get the same stored response. Use them only for origins known to
/// ignore those differences (tracking parameters, unordered filters). The policy layer
/// chooses them per host; the default changes nothing.
///
/// Parameters are compared by their raw (still percent-encoded) names, case-sensitively.
public struct CacheKeyNormalizer: Sendable, Hashable {
    /// Query parameter names removed from the key (default: none), e.g. `utm_source`.
    public var droppedQueryParameters: Set<String>
    /// Sort the parameters by name (default: false). The sort is stable, so repeated
    /// parameters keep their relative order (`a=2&a=1` stays distinct from `a=1&a=2`).
    public var sortsQueryParameters: Bool
    /// Ignore the whole query (default: false): every query of a path shares one entry.
    public var ignoresQuery: Bool

    /// A normalizer with the given options.
    public init(
        droppedQueryParameters: Set<String> = [],
        sortsQueryParameters: Bool = false,
        ignoresQuery: Bool = false
    ) {
        self.droppedQueryParameters = droppedQueryParameters
        self.sortsQueryParameters = sortsQueryParameters
        self.ignoresQuery = ignoresQuery
    }

    /// No rewriting: the query is kept as is.
    public static let standard = CacheKeyNormalizer()

    /// The path and query with this normalizer's rewriting applied.
    public func normalize(pathAndQuery: String) -> String {
        // Asked for every lookup: the standard normalizer returns at once, without a search.
        guard ignoresQuery || !droppedQueryParameters.isEmpty || sortsQueryParameters else { return pathAndQuery }
        // Over the UTF-8 (an ASCII byte is a character boundary).
        guard let mark = pathAndQuery.utf8.firstIndex(of: UInt8(ascii: "?")) else { return pathAndQuery }
        let path = pathAndQuery[..<mark]
        if ignoresQuery { return String(path) }
        let query: Substring = pathAndQuery[pathAndQuery.index(after: mark)...]
        var parameters: [(name: Substring, text: Substring)] = query.split(separator: "&").map { part in
            (name: part.firstIndex(of: "=").map { part[..<$0] } ?? part, text: part)
        }
        if !droppedQueryParameters.isEmpty {
            parameters.removeAll { droppedQueryParameters.contains(String($0.name)) }
        }
        if sortsQueryParameters {
            // Swift's sort is not guaranteed stable: sort on (name, original position).
            let ordered = parameters.enumerated().sorted { (lhs, rhs) -> Bool in
                let (l, r) = (lhs.element.name.utf8, rhs.element.name.utf8)
                if l.elementsEqual(r) { return lhs.offset < rhs.offset }
                return l.lexicographicallyPrecedes(r)
            }
            parameters = ordered.map(\.element)
        }
        if parameters.isEmpty { return String(path) }
        return path + "?" + parameters.map(\.text).joined(separator: "&")
    }
}
