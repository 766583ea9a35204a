import CLMDB

/// The B-tree statistics of one database (`mdb_stat`).
public struct DatabaseStats: Sendable, Hashable {
    /// The number of key/value pairs.
    public var entries: Int
    /// The height of the B-tree.
    public var depth: Int
    /// Internal (non-leaf) pages.
    public var branchPages: Int
    /// Leaf pages.
    public var leafPages: Int
    /// Pages holding values too large for a leaf.
    public var overflowPages: Int
    /// The page size in bytes.
    public var pageSize: Int

    /// The bytes taken by the database's pages.
    public var sizeInBytes: Int {
        (branchPages + leafPages + overflowPages) * pageSize
    }

    init(_ stat: MDB_stat) {
        entries = stat.ms_entries
        depth = Int(stat.ms_depth)
        branchPages = stat.ms_branch_pages
        leafPages = stat.ms_leaf_pages
        overflowPages = stat.ms_overflow_pages
        pageSize = Int(stat.ms_psize)
    }
}
