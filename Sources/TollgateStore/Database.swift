import CLMDB

/// A handle on a named database inside an `Environment`, from `Environment.openDatabase(named:create:)`.
///
/// A plain value, valid in every transaction of the environment that made it, on any
/// thread, until the database is dropped or the environment closes.
public struct Database: Hashable, Sendable, CustomStringConvertible {
    /// The database's name.
    public let name: String
    /// LMDB's handle.
    let dbi: MDB_dbi
    /// The environment that opened it, to catch handles passed to the wrong one.
    let environmentID: ObjectIdentifier

    /// The name, as written in logs.
    public var description: String { "Database(\(name))" }
}
