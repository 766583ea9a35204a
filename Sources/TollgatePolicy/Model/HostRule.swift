public import TollgateSession

/// One entry of `hosts`: the patterns it matches and what it sets for those hosts.
///
/// Rules are first-match (``HostRuleMatcher``). A host no rule matches gets a rule with every field
/// at its default: the `default` session, system trust roots, caching allowed.
public struct HostRule: Hashable, Sendable {
    /// The hosts this rule is for (`match`, a string or a list). Required, at least one.
    public var patterns: [HostPattern]
    /// The session that carries these hosts' requests (`session`). Default: `default`.
    public var session: String = SessionSettings.defaultName
    /// How these hosts' certificates are checked (`trust`). Default: ``Trust/init()``.
    public var trust = Trust()
    /// The client certificate presented to these hosts (`client-identity`). Default: nil, none.
    public var clientIdentity: ClientIdentity?
    /// Credentials answering these hosts' Basic and Digest challenges (`credentials`). Default: none.
    public var credentials: [Credential] = []
    /// Cache overrides (`cache`). Default: ``CacheOverride/init()``, storing allowed, no change.
    public var cache = CacheOverride()
    /// Whether CONNECT tunnels to these hosts are intercepted (TLS terminated with a certificate
    /// from the local CA) so their requests can be cached (`intercept`). Default: false.
    public var intercept: Bool = false
    /// Whether the session offers HTTP/2 to these hosts' https origins (`http2`). Default: `auto`.
    public var http2: HTTP2Use = .auto
    /// Where connections for these hosts are made instead of their own addresses (`connect-to`):
    /// tried in turn, a new connection starting at the next, one that fails going last for 10 s.
    /// URL, `Host`, TLS name, trust and cache key stay the host's. Default: none.
    public var connectTo: [ConnectionTarget] = []
    /// How often each ``connectTo`` target is checked (`connect-to-check`, HAProxy's `check`):
    /// one that fails a check goes last, before a request pays for it, until a check passes.
    /// Default: nil, no checks (the failures requests meet decide alone).
    public var connectToCheck: Duration?
    /// What a check asks beyond an accepted TCP connection (`connect-to-check`'s `tls`,
    /// `request`, `expect`, `host`): a TLS handshake trusted by this rule's `trust`, an HTTP
    /// status. Default: nil, a TCP connection.
    public var connectToCheckProbe: ConnectionTargetProbe?
    /// How many checks in a row fail before a target goes out, and how many pass before it is
    /// back (`connect-to-check`'s `fall` and `rise`, HAProxy's). Default: 1 and 1.
    public var connectToCheckFall = 1, connectToCheckRise = 1
    /// How long one check may take (`connect-to-check`'s `timeout`, HAProxy's `timeout check`).
    /// Default: nil, the interval, at most 3 s.
    public var connectToCheckTimeout: Duration?
    /// Changes to these hosts' request header fields as they go upstream (`request-headers`).
    /// Default: none.
    public var requestHeaders = HeaderEdits()
    /// Changes to these hosts' response header fields as they go to the client, from the origin
    /// or the cache (`response-headers`). Default: none.
    public var responseHeaders = HeaderEdits()
    /// Paths of these hosts answered from local files, first match wins (`map-local`). Default: none.
    public var mapLocal: [LocalMapping] = []
    /// Paths of these hosts sent to other URLs instead, first match wins (`map-remote`). Default: none.
    public var mapRemote: [RemoteMapping] = []
    /// Responses compressed with gzip for clients that accept it (`compress`). Default: nil, none.
    public var compress: Compression?
    /// The line of the file where the rule starts, for messages; nil for a rule built in code.
    public var sourceLine: Int?

    /// A rule for `patterns` with every other field at its default.
    public init(patterns: [HostPattern]) { self.patterns = patterns }
}

extension HostRule {
    /// The client certificate and key presented when these hosts ask for one (`client-identity`).
    public struct ClientIdentity: Hashable, Sendable {
        /// The PEM certificate (chain) file (`certificate`). Required.
        public var certificate: String
        /// The PEM private key file (`key`). Required.
        public var key: String

        /// Creates an identity setting.
        public init(certificate: String, key: String) {
            self.certificate = certificate
            self.key = key
        }
    }

    /// A credential for a challenge (an entry of `credentials`), as a `URLCredential` in
    /// `URLCredentialStorage` keyed by protection space.
    public struct Credential: Hashable, Sendable {
        /// Where the password comes from; never the password itself, so the model can be printed.
        public enum PasswordSource: Hashable, Sendable, CustomStringConvertible {
            /// The value of an environment variable of the proxy's process (`password-env`).
            case environment(String)
            /// The first line of a file (`password-file`).
            case file(String)

            public var description: String {
                switch self {
                case .environment(let name): "environment variable \(name)"
                case .file(let path): "file \(path)"
                }
            }
        }

        /// How long an answered credential is kept, `URLCredential.Persistence`.
        public enum Persistence: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
            /// Used for the one challenge, not stored.
            case none
            /// Kept in memory until the proxy exits (`session`).
            case forSession = "session"
            /// Kept in the credential store (LMDB) across restarts.
            case permanent

            public var description: String { rawValue }
        }

        /// The protection space's realm (`realm`). Default: nil, any realm of the host.
        public var realm: String?
        /// The user name (`user`). Required.
        public var user: String
        /// Where the password is read from (`password-env` or `password-file`, exactly one). Required.
        public var password: PasswordSource
        /// How long the credential is kept (`persistence`). Default: session.
        public var persistence: Persistence = .forSession

        /// Creates a credential setting.
        public init(realm: String?, user: String, password: PasswordSource, persistence: Persistence = .forSession) {
            self.realm = realm
            self.user = user
            self.password = password
            self.persistence = persistence
        }
    }
}
