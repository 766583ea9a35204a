/// The Cache-Control directives of one request or response (RFC 9111 §5.2), parsed from all
/// of its Cache-Control field lines.
///
/// Parsing never fails. Directive names are case-insensitive; arguments may be tokens or
/// quoted-strings (recipients accept both forms, §5.2). Where a directive is repeated or its
/// argument is invalid, the value kept is the most restrictive reading (§4.2.1):
///
/// - `max-age`, `s-maxage`: an invalid argument, or repeats that disagree, give 0 (stale).
/// - `min-fresh`: repeats keep the largest; an invalid argument gives ``maximumDeltaSeconds``.
/// - `max-stale`, `stale-while-revalidate`, `stale-if-error`: repeats keep the smallest (a bare
///   `max-stale` is the least restrictive); an invalid argument gives 0.
/// - `no-cache`, `private`: the unqualified form wins over field names; names from repeats are
///   merged; an empty or invalid name list counts as unqualified.
/// - `no-store`, `no-transform`, `only-if-cached`, `must-revalidate`, `proxy-revalidate` are set
///   even with a (disallowed) argument; `public`, `immutable` and `must-understand`, which
///   relax rules, are ignored when given one.
///
/// delta-seconds larger than ``maximumDeltaSeconds`` are saturated to it (§1.2.2).
public struct CacheControl: Sendable, Hashable, CustomStringConvertible {
    /// 2^31, the value every larger delta-seconds is read as (RFC 9111 §1.2.2).
    public static let maximumDeltaSeconds = 2_147_483_648

    /// The argument of `max-stale`.
    public enum MaxStale: Sendable, Hashable {
        /// Bare `max-stale`: a stale response of any age is acceptable.
        case any
        /// `max-stale=N`: a response stale by at most N seconds is acceptable.
        case seconds(Int)
    }

    /// The scope of `no-cache` or `private`.
    public enum FieldNames: Sendable, Hashable {
        /// The unqualified form: the directive applies to the whole response.
        case all
        /// The qualified form: the directive applies only to these fields (lowercased).
        case listed([String])
    }

    /// `max-age` (request §5.2.1.1, response §5.2.2.1), in seconds.
    public var maxAge: Int? = nil
    /// `s-maxage` (response §5.2.2.10), in seconds; shared caches use it instead of max-age.
    public var sMaxAge: Int? = nil
    /// `max-stale` (request §5.2.1.2).
    public var maxStale: MaxStale? = nil
    /// `min-fresh` (request §5.2.1.3), in seconds.
    public var minFresh: Int? = nil
    /// `no-cache` (request §5.2.1.4, response §5.2.2.4).
    public var noCache: FieldNames? = nil
    /// `no-store` (request §5.2.1.5, response §5.2.2.5).
    public var noStore = false
    /// `no-transform` (request §5.2.1.6, response §5.2.2.6).
    public var noTransform = false
    /// `only-if-cached` (request §5.2.1.7).
    public var onlyIfCached = false
    /// `must-revalidate` (response §5.2.2.2).
    public var mustRevalidate = false
    /// `proxy-revalidate` (response §5.2.2.8): must-revalidate for shared caches only.
    public var proxyRevalidate = false
    /// `must-understand` (response §5.2.2.3).
    public var mustUnderstand = false
    /// `private` (response §5.2.2.7): a shared cache must not store the response (or the listed fields).
    public var `private`: FieldNames? = nil
    /// `public` (response §5.2.2.9).
    public var `public` = false
    /// `immutable` (RFC 8246): the response will not change while fresh.
    public var immutable = false
    /// `stale-while-revalidate` (RFC 5861 §3), in seconds.
    public var staleWhileRevalidate: Int? = nil
    /// `stale-if-error` (RFC 5861 §4), in seconds.
    public var staleIfError: Int? = nil
    /// Directives this type does not know, in received order, names lowercased (§5.2.3).
    public var extensions: [FieldDirective] = []

    /// No directives (what a message without Cache-Control has). Built in place, not through
    /// the initializer below with its defaults: most requests parse no field, and that one
    /// copied the whole value into `self` (a retain per array it holds) each time.
    public init() {}

    /// Creates a value with the given directives (none by default).
    public init(
        maxAge: Int? = nil, sMaxAge: Int? = nil, maxStale: MaxStale? = nil, minFresh: Int? = nil,
        noCache: FieldNames? = nil, noStore: Bool = false, noTransform: Bool = false, onlyIfCached: Bool = false,
        mustRevalidate: Bool = false, proxyRevalidate: Bool = false, mustUnderstand: Bool = false,
        private: FieldNames? = nil, public: Bool = false, immutable: Bool = false,
        staleWhileRevalidate: Int? = nil, staleIfError: Int? = nil, extensions: [FieldDirective] = []
    ) {
        self.maxAge = maxAge
        self.sMaxAge = sMaxAge
        self.maxStale = maxStale
        self.minFresh = minFresh
        self.noCache = noCache
        self.noStore = noStore
        self.noTransform = noTransform
        self.onlyIfCached = onlyIfCached
        self.mustRevalidate = mustRevalidate
        self.proxyRevalidate = proxyRevalidate
        self.mustUnderstand = mustUnderstand
        self.private = `private`
        self.public = `public`
        self.immutable = immutable
        self.staleWhileRevalidate = staleWhileRevalidate
        self.staleIfError = staleIfError
        self.extensions = extensions
    }

    /// Parses the values of every Cache-Control field line of a message, in order.
    public init(fieldValues: [String]) {
        self.init()
        for value in fieldValues {
            FieldScanner.withBytes(of: value) { apply(directivesOf: $0) }
        }
    }

    /// Parses every Cache-Control field line of `fields`, in order, as ``init(fieldValues:)``
    /// does, but over the lines' bytes in place: no array of values and no string per value
    /// (this runs for every response the cache sees and every request that carries the field).
    public init(cacheControlLinesOf fields: HeaderFields) {
        self.init()
        fields.forEachValueBytes(named: .cacheControl) { value in
            apply(directivesOf: FieldScanner(value.assumingMemoryBound(to: UInt8.self)))
        }
    }

    /// Applies every directive of one field value, in order.
    private mutating func apply(directivesOf scanner: FieldScanner) {
        scanner.forEachElement { element in
            if let directive = scanner.directive(element) { apply(directive, scanner) }
        }
    }

    /// Parses one Cache-Control field value.
    public init(_ fieldValue: String) {
        self.init(fieldValues: [fieldValue])
    }

    /// The directives as one field value, known directives first in a fixed order, then the
    /// extensions as received; field-name lists are always quoted (§5.2.2.4, §5.2.2.7).
    public var description: String {
        var parts: [String] = []
        func add(_ name: String, _ seconds: Int?) {
            if let seconds { parts.append("\(name)=\(seconds)") }
        }
        func add(_ name: String, _ names: FieldNames?) {
            switch names {
            case nil: break
            case .all: parts.append(name)
            case .listed(let list): parts.append("\(name)=\(FieldList.quoted(list.joined(separator: ", ")))")
            }
        }
        func add(_ name: String, _ flag: Bool) {
            if flag { parts.append(name) }
        }
        add("max-age", maxAge)
        add("s-maxage", sMaxAge)
        switch maxStale {
        case nil: break
        case .any: parts.append("max-stale")
        case .seconds(let seconds): add("max-stale", seconds)
        }
        add("min-fresh", minFresh)
        add("no-cache", noCache)
        add("no-store", noStore)
        add("no-transform", noTransform)
        add("only-if-cached", onlyIfCached)
        add("must-revalidate", mustRevalidate)
        add("proxy-revalidate", proxyRevalidate)
        add("must-understand", mustUnderstand)
        add("private", self.private)
        add("public", self.public)
        add("immutable", immutable)
        add("stale-while-revalidate", staleWhileRevalidate)
        add("stale-if-error", staleIfError)
        parts += extensions.map(\.description)
        return parts.joined(separator: ", ")
    }

    // MARK: - Parsing helpers

    /// Records one directive, merging it with earlier ones as the type's documentation says.
    private mutating func apply(_ directive: FieldScanner.Directive, _ scanner: FieldScanner) {
        let name = directive.name
        let bare = directive.value == nil
        // delta-seconds, or nil when absent or invalid.
        var seconds: Int? {
            guard let value = directive.value, !directive.malformed else { return nil }
            return scanner.digits(value, saturatingAt: Self.maximumDeltaSeconds)
        }
        var fieldNames: FieldNames { Self.fieldNames(directive, scanner) }
        // Names are compared byte-wise (no String per directive): most common first.
        if scanner.nameEquals(name, "max-age") {
            maxAge = Self.lifetime(maxAge, seconds)
        } else if scanner.nameEquals(name, "public") {
            self.public = self.public || bare
        } else if scanner.nameEquals(name, "private") {
            self.private = Self.merge(self.private, fieldNames)
        } else if scanner.nameEquals(name, "no-cache") {
            noCache = Self.merge(noCache, fieldNames)
        } else if scanner.nameEquals(name, "no-store") {
            noStore = true
        } else if scanner.nameEquals(name, "must-revalidate") {
            mustRevalidate = true
        } else if scanner.nameEquals(name, "s-maxage") {
            sMaxAge = Self.lifetime(sMaxAge, seconds)
        } else if scanner.nameEquals(name, "immutable") {
            immutable = immutable || bare
        } else if scanner.nameEquals(name, "stale-while-revalidate") {
            staleWhileRevalidate = min(staleWhileRevalidate ?? .max, seconds ?? 0)
        } else if scanner.nameEquals(name, "stale-if-error") {
            staleIfError = min(staleIfError ?? .max, seconds ?? 0)
        } else if scanner.nameEquals(name, "no-transform") {
            noTransform = true
        } else if scanner.nameEquals(name, "proxy-revalidate") {
            proxyRevalidate = true
        } else if scanner.nameEquals(name, "must-understand") {
            mustUnderstand = mustUnderstand || bare
        } else if scanner.nameEquals(name, "max-stale") {
            maxStale = Self.merge(maxStale, bare ? .any : .seconds(seconds ?? 0))
        } else if scanner.nameEquals(name, "min-fresh") {
            minFresh = max(minFresh ?? 0, seconds ?? Self.maximumDeltaSeconds)
        } else if scanner.nameEquals(name, "only-if-cached") {
            onlyIfCached = true
        } else {
            extensions.append(FieldDirective(scanner, directive))
        }
    }

    /// A freshness lifetime seen (again): invalid is 0, and a repeat that disagrees is 0 (§4.2.1).
    private static func lifetime(_ current: Int?, _ new: Int?) -> Int {
        let new = new ?? 0
        guard let current else { return new }
        return current == new ? new : 0
    }

    private static func merge(_ current: MaxStale?, _ new: MaxStale) -> MaxStale {
        switch (current, new) {
        case (nil, _), (.any?, _): new
        case (.seconds(let a)?, .seconds(let b)): .seconds(min(a, b))
        case (.seconds(let a)?, .any): .seconds(a)
        }
    }

    private static func merge(_ current: FieldNames?, _ new: FieldNames) -> FieldNames {
        switch (current, new) {
        case (nil, _): new
        case (.all?, _), (_, .all): .all
        case (.listed(let a)?, .listed(let b)): .listed(a + b.filter { !a.contains($0) })
        }
    }

    /// The scope of `no-cache` / `private`: field names from a token or a quoted list.
    private static func fieldNames(_ directive: FieldScanner.Directive, _ scanner: FieldScanner) -> FieldNames {
        guard let value = directive.value, !directive.malformed else { return .all }
        let (names, star, allValid) = FieldList.names([scanner.string(value)])
        // A list naming nothing, or something that is not a field name, cannot be honoured
        // field by field: apply the directive to the whole response.
        return allValid && !star && !names.isEmpty ? .listed(names) : .all
    }
}
