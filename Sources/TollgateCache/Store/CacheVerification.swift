/// The outcome of ``CacheStore/verify(repair:)``.
public struct CacheVerification: Sendable, Hashable {
    /// One bad entry.
    public struct Problem: Sendable, Hashable, CustomStringConvertible {
        /// What is wrong.
        public enum Kind: String, Sendable, Hashable {
            /// The record does not decode.
            case undecodable = "undecodable"
            /// The body file is missing or unreadable.
            case missingBody = "missing-body"
            /// The body's length is not the recorded one.
            case lengthMismatch = "length-mismatch"
            /// The body's SHA-256 is not the recorded one.
            case digestMismatch = "digest-mismatch"
            /// A URL's entry lists a variant that is absent or filed under another URL (the URL
            /// given is the entry's); lookups skip it.
            case misfiled = "misfiled"
            /// A variant its URL's entry does not list: no lookup finds it, it only takes room.
            case unlisted = "unlisted"
            /// The LRU index ranks a variant twice, not at all, or ranks none: eviction order is off.
            case lruInconsistent = "lru-inconsistent"
            /// The stored byte and variant totals are not what the variants add up to: the
            /// capacity is enforced against a wrong figure.
            case totalsInconsistent = "totals-inconsistent"
        }

        /// The variant.
        public var id: CacheEntryID
        /// Its URL, when the record decodes.
        public var url: String?
        /// What is wrong.
        public var kind: Kind
        /// More about it, when the kind alone does not say it.
        public var detail: String?

        /// A problem of a variant (or, with an id of 0, of the index as a whole).
        public init(id: CacheEntryID, url: String?, kind: Kind, detail: String? = nil) {
            self.id = id
            self.url = url
            self.kind = kind
            self.detail = detail
        }

        public var description: String {
            let subject = url ?? (id.rawValue == 0 ? "index" : "variant \(id)")
            return "\(subject): \(kind.rawValue)" + (detail.map { " (\($0))" } ?? "")
        }
    }

    /// Entries checked.
    public var checked: Int
    /// The bad ones.
    public var problems: [Problem]
    /// How many bad entries were removed (with `repair`).
    public var removed: Int
    /// How many index records were mended (with `repair`): an entry's list, an LRU rank, the totals.
    public var indexRepairs: Int = 0

    /// Whether every entry checked out.
    public var isClean: Bool { problems.isEmpty }
}
