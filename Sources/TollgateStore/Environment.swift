import CLMDB
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An LMDB environment: one directory holding `data.mdb` and `lock.mdb`, with named databases.
///
/// Threading: every method may be called from any thread. Reads run concurrently and never
/// block writers; writes are serialized (one at a time per process). Transactions are
/// closure-scoped (`read`, `write`) and synchronous, so they block the calling thread: from
/// an event loop, hand writes to a `StoreWriter`. On one thread, a read may run inside a write
/// or another read, but a write may not start inside any transaction of the same environment
/// (it throws `StoreError.nestedTransaction` instead of deadlocking).
///
/// The map grows by itself: a write that finds it full is aborted, the map doubles (up to
/// `EnvironmentOptions.maxMapSize`) and the write closure runs again.
public final class Environment: @unchecked Sendable {
    // @unchecked: `handle` changes only while holding `writerLock` and `mapLock` exclusively,
    // so holding either one makes reading it safe; `databases` is guarded by `cacheLock`;
    // everything else is immutable or thread-safe by construction.

    /// The directory holding the environment's files.
    public let path: String
    /// The options the environment was opened with.
    public let options: EnvironmentOptions

    /// The LMDB handle (`MDB_env *`); nil once closed.
    var handle: OpaquePointer?
    /// Serializes write transactions, database opens, map growth and close in this process.
    let writerLock = NSLock()
    /// Shared by read transactions; taken alone to remap (grow) or close, since both
    /// invalidate every pointer into the map that a reader might hold.
    let mapLock = ReadWriteLock()
    /// How deep the current thread is in read transactions of this environment.
    let readDepth = ThreadLocalCounter()
    /// 1 while the current thread runs a write transaction of this environment.
    let writeDepth = ThreadLocalCounter()

    private let cacheLock = NSLock()
    private var databases: [String: Database] = [:]
    private var closedFlag = false

    /// Opens the environment at `path`, creating the directory and the files if missing
    /// (unless `options.readOnly`).
    ///
    /// - Throws: `StoreError` when the directory cannot be created or LMDB cannot open it.
    public init(path: String, options: EnvironmentOptions = EnvironmentOptions()) throws {
        self.path = path
        self.options = options
        if !options.readOnly {
            try Self.makeDirectory(path, mode: options.directoryMode)
        }
        let files = ["data.mdb", "lock.mdb"].map { path + "/" + $0 }
        let existed = files.map { access($0, F_OK) == 0 }

        var env: OpaquePointer?
        try StoreError.check(mdb_env_create(&env))
        guard let env else { throw StoreError.lmdb(ENOMEM) }
        do {
            try StoreError.check(mdb_env_set_mapsize(env, Self.pageRounded(options.mapSize)))
            try StoreError.check(mdb_env_set_maxdbs(env, MDB_dbi(options.maxDatabases)))
            try StoreError.check(mdb_env_set_maxreaders(env, UInt32(options.maxReaders)))
            // MDB_NOTLS: reader slots belong to the transaction, not the OS thread, so
            // SwiftNIO event loops and thread pools can share them freely.
            var flags = UInt32(MDB_NOTLS)
            if options.readOnly {
                flags |= UInt32(MDB_RDONLY)
                // LMDB keeps its reader table in lock.mdb and opens it read-write even for a
                // read-only environment; only a read-only file system lets it go without. A copy
                // of a cache the process may not write (another user's, a mount made read-only
                // by permissions) is read without the table, which is safe while nobody writes it.
                if !Self.lockFileIsWritable(path + "/lock.mdb") { flags |= UInt32(MDB_NOLOCK) }
            }
            try StoreError.check(mdb_env_open(env, path, flags, options.fileMode))
        } catch let error as StoreError {
            mdb_env_close(env)  // required after a failed mdb_env_open
            throw error.with(message: "\(error.message) (opening \(path))")
        }
        handle = env
        // LMDB creates the files with `fileMode & ~umask`; set the exact bits asked for.
        for (file, existed) in zip(files, existed) where !existed && !options.readOnly {
            chmod(file, options.fileMode)
        }
    }

    deinit {
        if let handle { mdb_env_close(handle) }
    }

    /// Closes the environment; later calls throw `StoreError.closed`. Idempotent.
    ///
    /// Waits for running transactions to finish. Must not be called inside a transaction
    /// of this environment (it would wait for itself).
    public func close() {
        precondition(
            readDepth.value == 0 && writeDepth.value == 0,
            "Environment.close() called inside one of its transactions"
        )
        writerLock.lock()
        mapLock.lockExclusive()
        defer {
            mapLock.unlock()
            writerLock.unlock()
        }
        closeHandle()
    }

    /// True once `close()` has run (or a failed map growth closed the environment).
    public var isClosed: Bool {
        cacheLock.withLock { closedFlag }
    }

    /// Closes the LMDB handle. The caller holds `writerLock` and `mapLock` exclusively.
    func closeHandle() {
        if let handle { mdb_env_close(handle) }
        handle = nil
        cacheLock.withLock {
            closedFlag = true
            databases.removeAll()
        }
    }

    /// The handle for a database opened earlier, if any.
    func cachedDatabase(named name: String) -> Database? {
        cacheLock.withLock { databases[name] }
    }

    /// Remembers an opened database so later opens need no transaction.
    func cacheDatabase(_ database: Database) {
        cacheLock.withLock { databases[database.name] = database }
    }

    /// Forgets a dropped database: LMDB closed its handle.
    func forgetDatabase(named name: String) {
        _ = cacheLock.withLock { databases.removeValue(forKey: name) }
    }

    /// Every database opened so far.
    var openedDatabases: [Database] {
        cacheLock.withLock { Array(databases.values) }
    }

    /// Runs `body` with the handle, making sure no remap or close can happen meanwhile.
    func withHandle<T>(_ body: (OpaquePointer) throws -> T) throws -> T {
        // Inside a transaction on this thread the locks are already held (read: mapLock
        // shared; write: writerLock, without which no remap or close happens).
        let needsLock = readDepth.value == 0 && writeDepth.value == 0
        if needsLock { mapLock.lockShared() }
        defer { if needsLock { mapLock.unlock() } }
        guard let handle else { throw StoreError.closed }
        return try body(handle)
    }

    /// Whether LMDB can open (or create) its lock file read-write.
    static func lockFileIsWritable(_ lockPath: String) -> Bool {
        if access(lockPath, F_OK) == 0 { return access(lockPath, W_OK) == 0 && !isDirectory(lockPath) }
        let directory = String(lockPath[..<(lockPath.lastIndex(of: "/") ?? lockPath.startIndex)])
        return access(directory.isEmpty ? "/" : directory, W_OK) == 0
    }

    private static func isDirectory(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
    }

    /// `size` rounded up to whole OS pages, as LMDB recommends for map sizes.
    static func pageRounded(_ size: Int) -> Int {
        let page = max(Int(sysconf(Int32(_SC_PAGESIZE))), 4096)
        return (max(size, page) + page - 1) / page * page
    }

    /// `mkdir -p` with exact permission bits on the directories it creates.
    static func makeDirectory(_ path: String, mode: mode_t) throws {
        var path = path
        while path.count > 1, path.hasSuffix("/") { path.removeLast() }
        if mkdir(path, mode) == 0 {
            chmod(path, mode)  // mkdir applies the umask
            return
        }
        let error = errno
        if error == EEXIST { return }  // a file there makes mdb_env_open fail with ENOTDIR
        guard error == ENOENT, let slash = path.lastIndex(of: "/"), slash != path.startIndex else {
            throw StoreError.system(error, "cannot create directory \(path)")
        }
        try makeDirectory(String(path[..<slash]), mode: mode)
        guard mkdir(path, mode) == 0 || errno == EEXIST else {
            throw StoreError.system(errno, "cannot create directory \(path)")
        }
        chmod(path, mode)
    }
}
