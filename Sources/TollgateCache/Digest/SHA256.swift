/// SHA-256 (FIPS 180-4), computed incrementally.
///
/// The cache records the digest of every body it stores and `CacheStore.verify()` recomputes
/// it. This module must not link OpenSSL (only `TollgateTLS` does), so the hash is written
/// here: a straightforward, allocation-free implementation of the standard, checked against
/// the FIPS 180-2 example vectors in the tests.
public struct SHA256: Sendable {
    /// The length of a digest in bytes.
    public static let digestCount = 32

    private var state: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) = (
        0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19
    )
    /// Bytes waiting for a whole 64-byte block.
    private var pending: [UInt8] = []
    /// The number of bytes hashed so far.
    private var count: UInt64 = 0

    /// Starts a new digest.
    public init() {
        pending.reserveCapacity(64)
    }

    /// Adds bytes to the digest.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        count &+= UInt64(bytes.count)
        var index = 0
        Self.k.withUnsafeBufferPointer { k in
            withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { schedule in
                if !pending.isEmpty {
                    let take = min(64 - pending.count, bytes.count)
                    pending.append(contentsOf: bytes[0..<take])
                    index = take
                    guard pending.count == 64 else { return }
                    pending.withUnsafeBytes { compress($0, k, schedule) }
                    pending.removeAll(keepingCapacity: true)
                }
                while bytes.count - index >= 64 {
                    compress(UnsafeRawBufferPointer(rebasing: bytes[index..<index + 64]), k, schedule)
                    index += 64
                }
            }
        }
        if index < bytes.count { pending.append(contentsOf: bytes[index...]) }
    }

    /// Adds bytes to the digest.
    public mutating func update<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        let handled: Void? = bytes.withContiguousStorageIfAvailable { update(UnsafeRawBufferPointer($0)) }
        if handled == nil {
            let copy = Array(bytes)
            copy.withUnsafeBytes { update($0) }
        }
    }

    /// The digest of everything added (the value itself is left unchanged).
    public func finalize() -> [UInt8] {
        var copy = self
        let bitLength = count &* 8
        var tail: [UInt8] = [0x80]
        let padding = (64 + 56 - (Int(count % 64) + 1)) % 64
        tail.append(contentsOf: repeatElement(0, count: padding))
        for shift in stride(from: 56, through: 0, by: -8) {
            tail.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift)))
        }
        tail.withUnsafeBytes { copy.update($0) }
        let s = copy.state
        let words = [s.0, s.1, s.2, s.3, s.4, s.5, s.6, s.7]
        var digest: [UInt8] = []
        digest.reserveCapacity(32)
        for word in words {
            digest.append(UInt8(truncatingIfNeeded: word >> 24))
            digest.append(UInt8(truncatingIfNeeded: word >> 16))
            digest.append(UInt8(truncatingIfNeeded: word >> 8))
            digest.append(UInt8(truncatingIfNeeded: word))
        }
        return digest
    }

    /// The digest of `bytes`.
    public static func hash<Bytes: Sequence>(_ bytes: Bytes) -> [UInt8] where Bytes.Element == UInt8 {
        var hasher = SHA256()
        hasher.update(bytes)
        return hasher.finalize()
    }

    /// Lowercase hexadecimal, as digests are shown.
    public static func hex<Bytes: Sequence>(_ digest: Bytes) -> String where Bytes.Element == UInt8 {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for byte in digest {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Processes one 64-byte block, with the round constants and a scratch schedule.
    private mutating func compress(
        _ block: UnsafeRawBufferPointer,
        _ k: UnsafeBufferPointer<UInt32>,
        _ w: UnsafeMutableBufferPointer<UInt32>
    ) {
        for i in 0..<16 {
            w[i] = UInt32(bigEndian: block.loadUnaligned(fromByteOffset: i * 4, as: UInt32.self))
        }
        for i in 16..<64 {
            let s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3)
            let s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10)
            w[i] = w[i - 16] &+ s0 &+ w[i - 7] &+ s1
        }
        var (a, b, c, d, e, f, g, h) = state
        for i in 0..<64 {
            let s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)
            let choice = (e & f) ^ (~e & g)
            let t1 = h &+ s1 &+ choice &+ k[i] &+ w[i]
            let s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)
            let majority = (a & b) ^ (a & c) ^ (b & c)
            h = g
            g = f
            f = e
            e = d &+ t1
            d = c
            c = b
            b = a
            a = t1 &+ s0 &+ majority
        }
        state.0 &+= a
        state.1 &+= b
        state.2 &+= c
        state.3 &+= d
        state.4 &+= e
        state.5 &+= f
        state.6 &+= g
        state.7 &+= h
    }

    @inline(__always)
    private func rotr(_ x: UInt32, _ n: UInt32) -> UInt32 { (x >> n) | (x << (32 - n)) }

    private static let k: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]
}
