#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An error from the cache store (LMDB failures arrive as `TollgateStore.StoreError`).
///
/// Compare with the static members (`error == .bodyTooLarge`); the message is not compared.
public struct CacheStoreError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case closed
        case bodyTooLarge
        case truncatedBody
        case writerFinished
        case invalidURL
        case readOnly
        case io
    }

    private let code: Code
    /// The `errno` of a failed system call; 0 otherwise.
    public let errorNumber: Int32
    /// What happened.
    public let message: String

    private init(_ code: Code, _ message: String, errorNumber: Int32 = 0) {
        self.code = code
        self.message = message
        self.errorNumber = errorNumber
    }

    /// The store has been closed.
    public static let closed = CacheStoreError(.closed, "the cache store is closed")
    /// The body is larger than the per-response limit (5 % of capacity): not stored.
    public static let bodyTooLarge = CacheStoreError(.bodyTooLarge, "the body exceeds the cache's per-response limit")
    /// The body is shorter or longer than its Content-Length: never committed.
    public static let truncatedBody = CacheStoreError(.truncatedBody, "the body length differs from Content-Length")
    /// The writer was already committed or aborted.
    public static let writerFinished = CacheStoreError(.writerFinished, "the cache entry writer has finished")
    /// A URL given to the store is not an absolute http(s) URL.
    public static let invalidURL = CacheStoreError(.invalidURL, "not an absolute http or https URL")

    /// The store was opened read-only (``CacheStoreOptions/readOnly``): nothing is written.
    public static let readOnly = CacheStoreError(.readOnly, "the cache is read-only")

    /// A failed system call on a body file.
    static func io(_ errorNumber: Int32, _ context: String) -> CacheStoreError {
        CacheStoreError(.io, "\(context): \(String(cString: strerror(errorNumber)))", errorNumber: errorNumber)
    }

    /// Whether this is a failed system call (any errno).
    public var isIOError: Bool { code == .io }

    /// Equal when the kind and errno match.
    public static func == (lhs: CacheStoreError, rhs: CacheStoreError) -> Bool {
        lhs.code == rhs.code && lhs.errorNumber == rhs.errorNumber
    }

    /// Hashes what `==` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(errorNumber)
    }

    public var description: String { "CacheStoreError: \(message)" }
}
