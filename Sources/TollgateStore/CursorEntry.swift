/// A key/value pair under a cursor, pointing into the map without copying.
///
/// Valid only until the cursor moves, the transaction writes, or the cursor's closure
/// returns; decode or copy what must outlive that.
public struct CursorEntry {
    /// The key's bytes.
    public let key: UnsafeRawBufferPointer
    /// The value's bytes.
    public let value: UnsafeRawBufferPointer

    /// Creates an entry from raw buffers.
    init(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        self.key = key
        self.value = value
    }

    /// The key decoded as `K`.
    public func decodedKey<K: StoreCodable>(as type: K.Type = K.self) throws -> K {
        try K(storeBytes: key)
    }

    /// The value decoded as `V`.
    public func decodedValue<V: StoreCodable>(as type: V.Type = V.self) throws -> V {
        try V(storeBytes: value)
    }

    /// True when the key starts with `prefix`.
    func keyHasPrefix(_ prefix: [UInt8]) -> Bool {
        key.count >= prefix.count && key.starts(with: prefix)
    }
}
