import CLMDB

/// Options for `WriteTransaction.put`.
public struct PutFlags: OptionSet, Sendable, Hashable {
    /// The raw `mdb_put` flags.
    public let rawValue: UInt32

    /// Flags from raw `mdb_put` flags.
    public init(rawValue: UInt32) {
        self.rawValue = rawValue
    }

    /// Fail with `StoreError.keyExists` instead of replacing an existing value (`MDB_NOOVERWRITE`).
    public static let noOverwrite = PutFlags(rawValue: UInt32(MDB_NOOVERWRITE))
    /// Append at the end: a fast path for keys given in ascending order; fails with
    /// `StoreError.keyExists` if the key is not greater than the last one (`MDB_APPEND`).
    public static let append = PutFlags(rawValue: UInt32(MDB_APPEND))
}
