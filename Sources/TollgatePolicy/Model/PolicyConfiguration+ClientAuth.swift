public import TollgateTLS

extension PolicyConfiguration.Listener.TLS {
    /// A TLS listener's `client-auth`: clients present certificates, checked in the handshake
    /// against ``roots`` (and ``crls``), as nginx's `ssl_verify_client` and HAProxy's
    /// `verify required` do. A certificate that fails the check fails the handshake, whether
    /// certificates are ``Verify/required`` or ``Verify/optional``.
    public struct ClientAuth: Hashable, Sendable {
        /// Whether a client must present a certificate (`verify`).
        public enum Verify: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
            /// A client without a certificate fails the handshake (TLS 1.3: alert
            /// `certificate_required`).
            case required
            /// A client may present none and is served without an identity; one it presents must
            /// pass the check.
            case optional

            public var description: String { rawValue }
        }

        /// What the origin is told of the client's certificate (`forward`).
        public enum Forward: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
            /// RFC 9440: `Client-Cert` (the leaf) and `Client-Cert-Chain` (what else the client
            /// presented), each certificate's DER as a structured-field byte sequence.
            case clientCert = "client-cert"
            /// Nothing: the certificate only admits the client.
            case off

            public var description: String { rawValue }
        }

        /// PEM bundle files of the CAs that issue client certificates (the anchors of the check,
        /// sent to clients as the acceptable CAs). Never the system roots. Paths are resolved.
        public var roots: [String]
        /// Files of revocation lists (PEM or DER) the client's chain is checked against; none
        /// unless given (then every certificate but the anchor needs its issuer's list).
        public var crls: [String]
        /// SPKI pins (`pins`): when any is given, a client's verified chain must hold a certificate
        /// with one of them — its own key, or its issuing CA's — besides leading to ``roots``.
        /// Default: none, any certificate the roots trust.
        public var pins: [SPKIPin]
        /// Default: ``Verify/required``.
        public var verify: Verify
        /// Default: ``Forward/clientCert`` on a reverse listener, ``Forward/off`` on a forward one
        /// (an HTTPS proxy's clients are admitted by their certificate; the origins they reach
        /// are not theirs to tell), settled when the listener is read.
        public var forward: Forward

        /// Creates client-certificate settings.
        public init(roots: [String], crls: [String] = [], pins: [SPKIPin] = [], verify: Verify = .required, forward: Forward = .off) {
            self.roots = roots
            self.crls = crls
            self.pins = pins
            self.verify = verify
            self.forward = forward
        }
    }
}
