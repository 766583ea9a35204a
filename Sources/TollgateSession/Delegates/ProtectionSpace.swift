/// The server and scheme a credential is good for, in the model of `URLProtectionSpace`.
public struct ProtectionSpace: Hashable, Sendable, CustomStringConvertible {
    /// How the server wants the client to authenticate.
    public struct AuthenticationMethod: Hashable, Sendable, CustomStringConvertible {
        /// The method's name.
        public let rawValue: String
        private init(_ rawValue: String) { self.rawValue = rawValue }

        /// HTTP Basic (RFC 7617).
        public static let httpBasic = AuthenticationMethod("basic")
        /// HTTP Digest (RFC 7616).
        public static let httpDigest = AuthenticationMethod("digest")
        /// NTLM.
        public static let ntlm = AuthenticationMethod("ntlm")
        /// Negotiate (Kerberos/SPNEGO).
        public static let negotiate = AuthenticationMethod("negotiate")
        /// The server's certificate must be evaluated (server trust).
        public static let serverTrust = AuthenticationMethod("server-trust")
        /// The server asked for a client certificate.
        public static let clientCertificate = AuthenticationMethod("client-certificate")
        /// Any other scheme named in WWW-Authenticate.
        public static func other(_ name: String) -> AuthenticationMethod { AuthenticationMethod(name.lowercased()) }

        /// Whether the seeds route this challenge to the session-level handler first
        /// (server trust, client certificate, NTLM, Negotiate); the others go to the task.
        public var isSessionLevel: Bool {
            self == .serverTrust || self == .clientCertificate || self == .ntlm || self == .negotiate
        }

        public var description: String { rawValue }
    }

    /// The host.
    public var host: String
    /// The port.
    public var port: Int
    /// `http` or `https`.
    public var `protocol`: String
    /// The realm the server named, if any.
    public var realm: String?
    /// The authentication method.
    public var authenticationMethod: AuthenticationMethod

    /// Creates a protection space.
    public init(host: String, port: Int, protocol: String, realm: String? = nil, authenticationMethod: AuthenticationMethod) {
        self.host = host
        self.port = port
        self.protocol = `protocol`
        self.realm = realm
        self.authenticationMethod = authenticationMethod
    }

    public var description: String {
        "\(self.protocol)://\(host):\(port) \(authenticationMethod)" + (realm.map { " realm=\"\($0)\"" } ?? "")
    }
}
