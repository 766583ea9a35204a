internal import COpenSSL

/// A TLS protocol version, for the bounds in ``TLSConfiguration`` and the version a handshake negotiated.
///
/// Versions are ordered: `.tlsv1_2 < .tlsv1_3`. TLS 1.0 and 1.1 exist so a configuration can name them, but
/// OpenSSL 3 at its default security level (Debian's `openssl.cnf`) refuses to negotiate them anyway.
public struct TLSVersion: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// OpenSSL's protocol number (`TLS1_2_VERSION` is 0x0303).
    let rawValue: Int32

    init(rawValue: Int32) { self.rawValue = rawValue }

    /// TLS 1.0.
    public static let tlsv1 = TLSVersion(rawValue: tg_TLS1_VERSION())
    /// TLS 1.1.
    public static let tlsv1_1 = TLSVersion(rawValue: tg_TLS1_1_VERSION())
    /// TLS 1.2: the default minimum.
    public static let tlsv1_2 = TLSVersion(rawValue: tg_TLS1_2_VERSION())
    /// TLS 1.3.
    public static let tlsv1_3 = TLSVersion(rawValue: tg_TLS1_3_VERSION())

    /// `TLSv1.2`, as OpenSSL and `openssl s_client` print it.
    public var description: String {
        switch self {
        case .tlsv1: "TLSv1"
        case .tlsv1_1: "TLSv1.1"
        case .tlsv1_2: "TLSv1.2"
        case .tlsv1_3: "TLSv1.3"
        default: "TLS(0x\(String(self.rawValue, radix: 16)))"
        }
    }

    /// Orders by protocol number, which OpenSSL keeps increasing from version to version.
    public static func < (lhs: TLSVersion, rhs: TLSVersion) -> Bool { lhs.rawValue < rhs.rawValue }
}
