import CLMDB

/// The state of an environment as a whole (`mdb_env_info` and `mdb_env_stat`).
public struct EnvironmentInfo: Sendable, Hashable {
    /// The current size of the memory map in bytes (it grows on demand).
    public var mapSize: Int
    /// The page size in bytes.
    public var pageSize: Int
    /// The number of the last page in use.
    public var lastPageNumber: Int
    /// The id of the last committed write transaction; it goes up by one per commit.
    public var lastTransactionID: Int
    /// The reader slots available.
    public var maxReaders: Int
    /// The reader slots used so far (a high-water mark, not the readers alive now).
    public var readersUsed: Int

    /// The bytes of the map in use: pages up to the last one.
    public var usedBytes: Int {
        (lastPageNumber + 1) * pageSize
    }

    init(_ info: MDB_envinfo, _ stat: MDB_stat) {
        mapSize = info.me_mapsize
        pageSize = Int(stat.ms_psize)
        lastPageNumber = info.me_last_pgno
        lastTransactionID = info.me_last_txnid
        maxReaders = Int(info.me_maxreaders)
        readersUsed = Int(info.me_numreaders)
    }
}
