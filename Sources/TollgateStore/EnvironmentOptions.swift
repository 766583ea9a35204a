#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// How an `Environment` is opened.
public struct EnvironmentOptions: Sendable, Hashable {
    /// The initial size of the memory map in bytes (default 64 MiB).
    ///
    /// The map grows on demand (it doubles when a write finds it full), so this is a
    /// starting point, not a limit. An existing environment keeps its larger recorded size.
    public var mapSize: Int
    /// The largest size the map may grow to, or nil for no limit but the address space.
    /// A write that would need more fails with `StoreError.mapFull`.
    public var maxMapSize: Int?
    /// The most named databases the environment can hold (default 16).
    public var maxDatabases: Int
    /// The most read transactions alive at once across all processes (default 126).
    public var maxReaders: Int
    /// The permission bits of `data.mdb` and `lock.mdb` when this open creates them
    /// (default 0o600). Applied exactly, whatever the process umask. A directory created
    /// by the open gets the same bits plus search (x) wherever read is set.
    public var fileMode: mode_t
    /// Opens without writing: writes throw `StoreError.readOnly` and nothing is created but
    /// LMDB's `lock.mdb` (its reader table) where the directory allows. Where `lock.mdb` cannot
    /// be opened read-write, the environment is read without the reader table (`MDB_NOLOCK`):
    /// correct only while no process writes it, which is what a read-only copy is for.
    public var readOnly: Bool

    /// Options with the defaults above unless given.
    public init(
        mapSize: Int = 64 << 20,
        maxMapSize: Int? = nil,
        maxDatabases: Int = 16,
        maxReaders: Int = 126,
        fileMode: mode_t = 0o600,
        readOnly: Bool = false
    ) {
        self.mapSize = mapSize
        self.maxMapSize = maxMapSize
        self.maxDatabases = maxDatabases
        self.maxReaders = maxReaders
        self.fileMode = fileMode
        self.readOnly = readOnly
    }

    /// The mode for a directory the open creates: the file mode plus x wherever r is set.
    var directoryMode: mode_t {
        fileMode | ((fileMode & 0o444) >> 2)
    }
}
