import Foundation

/// A type that can be a key or a value in the store: it exposes its bytes and is rebuilt from them.
///
/// LMDB orders keys by comparing their bytes (lexicographically, shorter first on a common
/// prefix), so an encoding decides the cursor order. Keys must be 1...511 bytes long.
public protocol StoreCodable {
    /// Calls `body` with the encoded bytes; the buffer is valid only during the call.
    func withStoreBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R
    /// Decodes a value from bytes read from the store.
    ///
    /// - Throws: `StoreError.invalidValue` when the bytes are not a valid encoding.
    init(storeBytes: UnsafeRawBufferPointer) throws
}

/// UTF-8 bytes, no terminator; keys sort by their UTF-8 bytes.
extension String: StoreCodable {
    /// Calls `body` with the UTF-8 bytes of the string.
    public func withStoreBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        var copy = self  // withUTF8 is mutating: it may make the storage contiguous first.
        return try copy.withUTF8 { try body(UnsafeRawBufferPointer($0)) }
    }

    /// Decodes UTF-8, replacing invalid sequences with U+FFFD.
    public init(storeBytes: UnsafeRawBufferPointer) throws {
        self = String(decoding: storeBytes, as: UTF8.self)
    }
}

/// The bytes themselves.
extension Array: StoreCodable where Element == UInt8 {
    /// Calls `body` with the array's bytes.
    public func withStoreBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeBytes(body)
    }

    /// Copies the bytes.
    public init(storeBytes: UnsafeRawBufferPointer) throws {
        self.init(storeBytes)
    }
}

/// Eight bytes, big-endian, so that cursor order is numeric order.
extension UInt64: StoreCodable {
    /// Calls `body` with the eight big-endian bytes. (Inlinable: the cache's lookups use it.)
    @inlinable
    public func withStoreBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try Swift.withUnsafeBytes(of: bigEndian, body)
    }

    /// Decodes eight big-endian bytes.
    ///
    /// - Throws: `StoreError.invalidValue` unless there are exactly eight bytes.
    public init(storeBytes: UnsafeRawBufferPointer) throws {
        guard storeBytes.count == MemoryLayout<UInt64>.size else { throw StoreError.invalidValue }
        // loadUnaligned: LMDB gives no alignment guarantee for keys or values.
        self.init(bigEndian: storeBytes.loadUnaligned(as: UInt64.self))
    }
}

/// The bytes themselves.
extension Data: StoreCodable {
    /// Calls `body` with the data's bytes.
    public func withStoreBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeBytes(body)
    }

    /// Copies the bytes.
    public init(storeBytes: UnsafeRawBufferPointer) throws {
        self.init(storeBytes)
    }
}
