public import TollgateHTTP
public import TollgateTLS

/// A request for authentication, in the model of `URLAuthenticationChallenge`.
public struct AuthenticationChallenge: Sendable {
    /// What the credential must be good for.
    public var protectionSpace: ProtectionSpace
    /// How many times a credential for this challenge has already failed in this task.
    public var previousFailureCount: Int
    /// The credential the session would use by default, if it has one.
    public var proposedCredential: Credential?
    /// The response that carried the challenge (a 401 for HTTP authentication).
    public var failureResponse: HTTPResponseHead?
    /// Scheme-specific parameters (e.g. the Digest nonce), by lowercased name.
    public var parameters: [String: String]
    /// For a server-trust challenge: the chain the server presented, the chain OpenSSL verified
    /// against the configured roots, and its verdict (`URLAuthenticationChallenge`'s serverTrust).
    public var serverTrust: TLSPeerEvaluation?

    /// Creates a challenge.
    public init(
        protectionSpace: ProtectionSpace,
        previousFailureCount: Int = 0,
        proposedCredential: Credential? = nil,
        failureResponse: HTTPResponseHead? = nil,
        parameters: [String: String] = [:],
        serverTrust: TLSPeerEvaluation? = nil
    ) {
        self.serverTrust = serverTrust
        self.protectionSpace = protectionSpace
        self.previousFailureCount = previousFailureCount
        self.proposedCredential = proposedCredential
        self.failureResponse = failureResponse
        self.parameters = parameters
    }
}

/// A credential that answers a challenge, in the model of `URLCredential`.
public struct Credential: Hashable, Sendable, CustomStringConvertible {
    /// How long the credential is remembered.
    public enum Persistence: String, Hashable, Sendable {
        /// Used for this request only.
        case none
        /// Remembered until the session ends.
        case forSession = "session"
        /// Stored permanently.
        case permanent
    }

    /// The user name (for password credentials).
    public var user: String?
    /// The password (never printed: ``description`` masks it).
    public var password: String?
    /// For server trust: accept the evaluated trust (the pins/roots were checked by the delegate).
    public var trustsServer: Bool
    /// For client certificates: PEM file paths of the certificate and its key.
    public var clientIdentity: (certificatePath: String, keyPath: String)? {
        get { identity.map { ($0.certificatePath, $0.keyPath) } }
        set { identity = newValue.map { Identity(certificatePath: $0.certificatePath, keyPath: $0.keyPath) } }
    }
    /// How long it is remembered.
    public var persistence: Persistence

    private struct Identity: Hashable, Sendable {
        var certificatePath: String
        var keyPath: String
    }

    private var identity: Identity?

    /// A user-and-password credential.
    public init(user: String, password: String, persistence: Persistence) {
        self.user = user
        self.password = password
        self.trustsServer = false
        self.persistence = persistence
    }

    /// A credential that accepts the server's trust.
    public static let serverTrust = Credential(trust: ())

    /// A client-certificate credential.
    public init(clientCertificatePath: String, keyPath: String, persistence: Persistence = .forSession) {
        self.trustsServer = false
        self.persistence = persistence
        self.identity = Identity(certificatePath: clientCertificatePath, keyPath: keyPath)
    }

    private init(trust: Void) {
        self.trustsServer = true
        self.persistence = .none
    }

    public var description: String {
        if trustsServer { return "Credential(server trust)" }
        if let identity { return "Credential(client certificate \(identity.certificatePath))" }
        return "Credential(user: \(user ?? ""), password: ****, \(persistence.rawValue))"
    }
}
