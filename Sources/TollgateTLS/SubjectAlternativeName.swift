/// One entry of a certificate's subjectAltName extension that Tollgate reads.
public enum SubjectAlternativeName: Hashable, Sendable, CustomStringConvertible {
    /// A `dNSName`, such as `example.com` or `*.example.com`.
    case dnsName(String)
    /// An `iPAddress`, in its usual text form (`192.0.2.1`, `2001:db8::1`).
    case ipAddress(String)

    /// `DNS:name` or `IP:address`, as `openssl x509 -text` prints them.
    public var description: String {
        switch self {
        case .dnsName(let name): "DNS:\(name)"
        case .ipAddress(let address): "IP:\(address)"
        }
    }
}
