internal import COpenSSL

/// Helpers for OpenSSL memory BIOs, the glue between Swift byte arrays and OpenSSL's readers and writers.
enum MemoryBIO {
    /// Runs `body` with a read-only memory BIO over `bytes`; the BIO does not copy, so it lives only for `body`.
    static func withReading<T>(_ bytes: [UInt8], _ body: (OpaquePointer) throws -> T) throws -> T {
        try bytes.withUnsafeBytes { buffer in
            // BIO_new_mem_buf wants a non-null pointer even for empty input.
            let base = buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!
            guard let bio = BIO_new_mem_buf(base, Int32(buffer.count)) else {
                throw OpenSSLError(.io, "allocating a memory BIO")
            }
            defer { BIO_free(bio) }
            return try body(bio)
        }
    }

    /// Runs `body` with an empty writable memory BIO and returns what `body` wrote to it.
    ///
    /// - Parameter secure: use OpenSSL's secure-memory BIO, whose buffer is cleared when freed (for keys).
    static func collecting(secure: Bool = false, _ body: (OpaquePointer) throws -> Void) throws -> [UInt8] {
        guard let bio = BIO_new(secure ? BIO_s_secmem() : BIO_s_mem()) else {
            throw OpenSSLError(.io, "allocating a memory BIO")
        }
        defer { BIO_free(bio) }
        try body(bio)
        return contents(of: bio)
    }

    /// The bytes currently held by a memory BIO.
    static func contents(of bio: OpaquePointer) -> [UInt8] {
        var pointer: UnsafeMutablePointer<CChar>? = nil
        let count = tg_BIO_get_mem_data(bio, &pointer)
        guard count > 0, let pointer else { return [] }
        return pointer.withMemoryRebound(to: UInt8.self, capacity: count) {
            Array(UnsafeBufferPointer(start: $0, count: count))
        }
    }

    /// The text held by a memory BIO, decoded as UTF-8.
    static func string(of bio: OpaquePointer) -> String {
        String(decoding: contents(of: bio), as: UTF8.self)
    }
}

/// A PEM passphrase callback that supplies no passphrase, so OpenSSL fails on encrypted PEM instead of
/// prompting on the terminal (what a nil callback does). When the user-data pointer is not nil it must
/// point to a `Bool`, which is set to true: the PEM was encrypted.
func noPassphrase(
    _ buffer: UnsafeMutablePointer<CChar>?,
    _ size: Int32,
    _ forWriting: Int32,
    _ asked: UnsafeMutableRawPointer?
) -> Int32 {
    asked?.storeBytes(of: true, as: Bool.self)
    return -1
}
