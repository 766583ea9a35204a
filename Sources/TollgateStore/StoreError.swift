import CLMDB

/// An error from the store: an LMDB failure, a misuse of the API, or a full writer queue.
///
/// Compare against the static members (`error == .keyExists`); equality looks at the kind
/// and the LMDB return code, never at the message.
public struct StoreError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case lmdb
        case system
        case keyExists
        case notFound
        case mapFull
        case mapResized
        case readersFull
        case databasesFull
        case badValueSize
        case invalidDatabase
        case invalidValue
        case closed
        case readOnly
        case transactionEnded
        case nestedTransaction
        case writerQueueFull
        case writerStopped
    }

    private let code: Code
    /// The LMDB (or `errno`) return code behind this error; 0 when the error is the store's own.
    public let returnCode: Int32
    /// A human-readable explanation, from `mdb_strerror` for LMDB failures.
    public let message: String

    private init(_ code: Code, _ returnCode: Int32, _ message: String? = nil) {
        self.code = code
        self.returnCode = returnCode
        self.message = message ?? Self.describe(returnCode)
    }

    /// The text `mdb_strerror` gives for a return code (it covers `errno` values too).
    static func describe(_ returnCode: Int32) -> String {
        String(cString: mdb_strerror(returnCode))
    }

    /// The error for an LMDB return code, using the specific static member when there is one.
    public static func lmdb(_ returnCode: Int32) -> StoreError {
        switch returnCode {
        case MDB_KEYEXIST: return .keyExists
        case MDB_NOTFOUND: return .notFound
        case MDB_MAP_FULL: return .mapFull
        case MDB_MAP_RESIZED: return .mapResized
        case MDB_READERS_FULL: return .readersFull
        case MDB_DBS_FULL: return .databasesFull
        case MDB_BAD_VALSIZE: return .badValueSize
        case MDB_BAD_DBI: return .invalidDatabase
        default: return StoreError(returnCode > 0 ? .system : .lmdb, returnCode)
        }
    }

    /// The same kind of error with a more specific message.
    func with(message: String) -> StoreError {
        StoreError(code, returnCode, message)
    }

    /// A `put` with `.noOverwrite` found the key already present (`MDB_KEYEXIST`).
    public static var keyExists: StoreError { StoreError(.keyExists, MDB_KEYEXIST) }
    /// The key or named database does not exist (`MDB_NOTFOUND`).
    public static var notFound: StoreError { StoreError(.notFound, MDB_NOTFOUND) }
    /// The map is full and may not grow any further (`MDB_MAP_FULL`).
    public static var mapFull: StoreError { StoreError(.mapFull, MDB_MAP_FULL) }
    /// Another process grew the map and this one could not adopt the new size here (`MDB_MAP_RESIZED`).
    public static var mapResized: StoreError { StoreError(.mapResized, MDB_MAP_RESIZED) }
    /// Every reader slot is taken (`MDB_READERS_FULL`); raise `maxReaders`.
    public static var readersFull: StoreError { StoreError(.readersFull, MDB_READERS_FULL) }
    /// Every named-database slot is taken (`MDB_DBS_FULL`); raise `maxDatabases`.
    public static var databasesFull: StoreError { StoreError(.databasesFull, MDB_DBS_FULL) }
    /// A key is empty or too long (511 bytes at most), or a value is too large (`MDB_BAD_VALSIZE`).
    public static var badValueSize: StoreError { StoreError(.badValueSize, MDB_BAD_VALSIZE) }
    /// The database handle is not valid in this environment or transaction (`MDB_BAD_DBI`).
    public static var invalidDatabase: StoreError { StoreError(.invalidDatabase, MDB_BAD_DBI) }
    /// Stored bytes could not be decoded as the requested type.
    public static var invalidValue: StoreError {
        StoreError(.invalidValue, 0, "stored bytes do not decode as the requested type")
    }
    /// The environment has been closed.
    public static var closed: StoreError { StoreError(.closed, 0, "the environment is closed") }
    /// A write was attempted on an environment opened read-only.
    public static var readOnly: StoreError { StoreError(.readOnly, 0, "the environment is read-only") }
    /// A transaction or cursor was used outside its closure, or while a nested transaction was active.
    public static var transactionEnded: StoreError {
        StoreError(.transactionEnded, 0, "the transaction or cursor is no longer usable here")
    }
    /// A write (or a database open) was started on a thread already inside a transaction of this environment.
    public static var nestedTransaction: StoreError {
        StoreError(.nestedTransaction, 0, "cannot start a write inside another transaction on the same thread")
    }
    /// The `StoreWriter` queue is at its limit; the work was not accepted.
    public static var writerQueueFull: StoreError {
        StoreError(.writerQueueFull, 0, "the writer queue is full")
    }
    /// The `StoreWriter` has been shut down; the work was not accepted.
    public static var writerStopped: StoreError {
        StoreError(.writerStopped, 0, "the writer has been shut down")
    }

    /// A failed system call outside LMDB, carrying its `errno`.
    static func system(_ errno: Int32, _ context: String) -> StoreError {
        StoreError(.system, errno, "\(context): \(describe(errno))")
    }

    /// Throws the matching error unless `returnCode` is `MDB_SUCCESS`.
    static func check(_ returnCode: Int32) throws {
        if returnCode != MDB_SUCCESS { throw lmdb(returnCode) }
    }

    /// Equal when the kind and the return code match; the message is ignored.
    public static func == (lhs: StoreError, rhs: StoreError) -> Bool {
        lhs.code == rhs.code && lhs.returnCode == rhs.returnCode
    }

    /// Hashes the kind and the return code, matching `==`.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(returnCode)
    }

    /// The message, followed by the return code when there is one.
    public var description: String {
        returnCode == 0 ? "StoreError: \(message)" : "StoreError(\(returnCode)): \(message)"
    }
}
