import CLMDB

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension Environment {
    /// The map size, page size, pages in use and last committed transaction id.
    public var info: EnvironmentInfo {
        get throws {
            try withHandle { handle in
                var info = MDB_envinfo()
                var stat = MDB_stat()
                try StoreError.check(mdb_env_info(handle, &info))
                try StoreError.check(mdb_env_stat(handle, &stat))
                return EnvironmentInfo(info, stat)
            }
        }
    }

    /// The id of the last committed write transaction (of any process), read from the meta page
    /// without a transaction: cheap enough for every cache lookup. A read transaction begun now
    /// sees this snapshot or a newer one (``ReadTransaction/id``).
    public var lastCommittedTransactionID: Int {
        get throws {
            try withHandle { handle in
                var info = MDB_envinfo()
                try StoreError.check(mdb_env_info(handle, &info))
                return info.me_last_txnid
            }
        }
    }

    /// The statistics (entry count, pages) of one database, as of now.
    public func stats(for database: Database) throws -> DatabaseStats {
        try read { try $0.stats(for: database) }
    }

    /// The statistics of every database opened through this environment so far, by name,
    /// all from one snapshot.
    public func stats() throws -> [String: DatabaseStats] {
        let databases = openedDatabases
        return try read { transaction in
            var result: [String: DatabaseStats] = [:]
            for database in databases {
                result[database.name] = try transaction.stats(for: database)
            }
            return result
        }
    }

    /// Flushes written data to disk (`mdb_env_sync`). Commits already fsync, so this only
    /// matters for data written with syncing turned off; a no-op when read-only.
    ///
    /// - Parameter force: sync even if the environment was opened with asynchronous flushing.
    public func sync(force: Bool = true) throws {
        guard !options.readOnly else { return }
        try withHandle { handle in
            try StoreError.check(mdb_env_sync(handle, force ? 1 : 0))
        }
    }

    /// Writes a consistent copy of the environment into the directory `path` (created if
    /// missing; it must not already hold a `data.mdb`). The copy's `data.mdb` is created
    /// with `fileMode`, exactly.
    ///
    /// - Parameter compact: omit free pages and renumber (`MDB_CP_COMPACT`): smaller, slower.
    /// - Throws: `StoreError.nestedTransaction` inside a write transaction of this environment.
    public func copy(to path: String, compact: Bool = true) throws {
        guard writeDepth.value == 0 else { throw StoreError.nestedTransaction }
        try Self.makeDirectory(path, mode: options.directoryMode)
        // Open the file ourselves rather than let mdb_env_copy2 create it 0666 & ~umask.
        let file = path + "/data.mdb"
        let fd = open(file, O_WRONLY | O_CREAT | O_EXCL, options.fileMode)
        guard fd >= 0 else { throw StoreError.system(errno, "cannot create \(file)") }
        defer { closeDescriptor(fd) }
        fchmod(fd, options.fileMode)
        try withHandle { handle in
            let rc = mdb_env_copyfd2(handle, fd, compact ? UInt32(MDB_CP_COMPACT) : 0)
            guard rc == MDB_SUCCESS else {
                unlink(file)
                throw StoreError.lmdb(rc).with(message: "copy to \(path) failed: \(StoreError.describe(rc))")
            }
        }
        guard fsync(fd) == 0 else { throw StoreError.system(errno, "cannot sync \(file)") }
    }
}

/// `close(2)`, named apart from `Environment.close()`.
private func closeDescriptor(_ fd: Int32) {
    #if canImport(Glibc)
    _ = Glibc.close(fd)
    #elseif canImport(Musl)
    _ = Musl.close(fd)
    #elseif canImport(Darwin)
    _ = Darwin.close(fd)
    #endif
}
