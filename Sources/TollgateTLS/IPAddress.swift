#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Converts IP addresses between text and the 4- or 16-byte network form certificates carry.
enum IPAddress {
    /// The network bytes of `text` when it is an IPv4 or IPv6 address (brackets allowed: `[::1]`), else nil.
    static func parse(_ text: String) -> [UInt8]? {
        var host = Substring(text)
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        var v4 = [UInt8](repeating: 0, count: 4)
        if inet_pton(AF_INET, String(host), &v4) == 1 { return v4 }
        var v6 = [UInt8](repeating: 0, count: 16)
        if inet_pton(AF_INET6, String(host), &v6) == 1 { return v6 }
        return nil
    }

    /// The usual text form of 4 or 16 network bytes, else nil.
    static func format(_ bytes: [UInt8]) -> String? {
        let family: Int32
        switch bytes.count {
        case 4: family = AF_INET
        case 16: family = AF_INET6
        default: return nil
        }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(family, bytes, &text, socklen_t(text.count)) != nil else { return nil }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
