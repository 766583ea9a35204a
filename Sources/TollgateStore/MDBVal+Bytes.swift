import CLMDB

/// A one-byte buffer whose address stands in for empty buffers, whose base address may be nil.
/// Never written to; LMDB reads zero bytes from it.
private nonisolated(unsafe) let emptyBytes = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)

extension MDB_val {
    /// An `MDB_val` that points at `buffer` (LMDB only reads through it for keys and values given to it).
    init(_ buffer: UnsafeRawBufferPointer) {
        self.init(
            mv_size: buffer.count,
            mv_data: buffer.baseAddress.map { UnsafeMutableRawPointer(mutating: $0) } ?? emptyBytes
        )
    }

    /// The bytes this value points at: memory inside the map, valid as long as LMDB says.
    var bytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: mv_data, count: mv_size)
    }
}

extension StoreCodable {
    /// Calls `body` with an `MDB_val` pointing at this value's encoded bytes.
    func withMDBVal<R>(_ body: (inout MDB_val) throws -> R) rethrows -> R {
        try withStoreBytes { buffer in
            var value = MDB_val(buffer)
            return try body(&value)
        }
    }

    /// The encoded bytes, copied.
    var storeBytes: [UInt8] {
        withStoreBytes { Array($0) }
    }
}
