import NIOCore

extension SocketAddress {
    /// The address as text, as `ipAddress` gives it, without glibc's `inet_ntop` for IPv4 (it
    /// formats with `sprintf`: about 1 700 instructions, once for every client connection).
    /// Other families are left to `ipAddress`.
    var addressText: String? {
        guard let bytes = networkBytes, bytes.count == 4 else { return ipAddress }
        return Self.dottedQuad(bytes)
    }

    /// `a.b.c.d` of four address bytes.
    static func dottedQuad(_ bytes: [UInt8]) -> String {
        precondition(bytes.count == 4, "an IPv4 address has four bytes")
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 15) { buffer in
            var count = 0
            for (index, octet) in bytes.enumerated() {
                if index > 0 {
                    buffer[count] = UInt8(ascii: ".")
                    count += 1
                }
                if octet >= 100 {
                    buffer[count] = UInt8(ascii: "0") + octet / 100
                    count += 1
                }
                if octet >= 10 {
                    buffer[count] = UInt8(ascii: "0") + octet / 10 % 10
                    count += 1
                }
                buffer[count] = UInt8(ascii: "0") + octet % 10
                count += 1
            }
            return String(decoding: UnsafeBufferPointer(rebasing: buffer[..<count]), as: UTF8.self)
        }
    }
}
