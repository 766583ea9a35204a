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
        }

        /// The variant.
        public var id: CacheEntryID
        /// Its URL, when the record decodes.
        public var url: String?
        /// What is wrong.
        public var kind: Kind

        public var description: String { "\(url ?? "variant \(id)"): \(kind.rawValue)" }
    }

    /// Entries checked.
    public var checked: Int
    /// The bad ones.
    public var problems: [Problem]
    /// How many bad entries were removed (with `repair`).
    public var removed: Int

    /// Whether every entry checked out.
    public var isClean: Bool { problems.isEmpty }
}
