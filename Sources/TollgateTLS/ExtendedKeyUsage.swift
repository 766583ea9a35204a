/// The purposes an issued leaf certificate may be used for (its extendedKeyUsage extension).
public struct ExtendedKeyUsage: OptionSet, Hashable, Sendable {
    /// The bits.
    public let rawValue: Int

    /// Creates a set from its bits.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// TLS server authentication (`serverAuth`): for certificates a server presents.
    public static let serverAuth = ExtendedKeyUsage(rawValue: 1 << 0)
    /// TLS client authentication (`clientAuth`): for client certificates.
    public static let clientAuth = ExtendedKeyUsage(rawValue: 1 << 1)

    /// The extension's value in `openssl.cnf` syntax.
    var configValue: String {
        var names: [String] = []
        if self.contains(.serverAuth) { names.append("serverAuth") }
        if self.contains(.clientAuth) { names.append("clientAuth") }
        return names.joined(separator: ",")
    }
}
