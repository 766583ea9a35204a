import Foundation
import TollgateTLS

/// What a client connection's TLS handshake settled, fixed for the connection's life: the
/// version, and the client's certificate when a listener's `client-auth` verified one.
struct ClientTLS: Sendable {
    /// The TLS version (`TLSv1.3`): logged, and a reverse listener says `X-Forwarded-Proto: https`.
    let version: String
    /// The client's verified certificate; nil when none was asked for or the client sent none.
    let certificate: ClientCertificate?
    /// Whether the origin is told of ``certificate`` (`client-auth.forward: client-cert`).
    let forwardsCertificate: Bool

    /// A connection without client certificates — or the TLS inside an intercepted CONNECT, which
    /// asks for none: the certificate the connection it came on proved (`outer`, an HTTPS proxy
    /// listener's `client-auth`) still names the client.
    init(version: String, inside outer: ClientTLS? = nil) {
        self.version = version
        self.certificate = outer?.certificate
        self.forwardsCertificate = outer?.forwardsCertificate ?? false
    }

    /// What a listener's handshake settled: a certificate is kept only when OpenSSL trusted it
    /// (a strict handshake fails otherwise, so an untrusted one never gets here).
    init(_ evaluation: TLSPeerEvaluation, forwardsCertificate: Bool) {
        self.version = evaluation.protocolVersion.description
        if evaluation.trustResult == .trusted, !evaluation.presentedChain.isEmpty {
            self.certificate = ClientCertificate(presentedChain: evaluation.presentedChain)
        } else {
            self.certificate = nil
        }
        self.forwardsCertificate = forwardsCertificate && certificate != nil
    }

    /// The certificate as the origin is told of it; nil when it is not.
    var forwardedCertificate: ClientCertificate? { forwardsCertificate ? certificate : nil }
}

/// A client certificate a TLS listener verified: what the access log says of it, and the RFC
/// 9440 fields an origin behind a reverse listener is told, made once per connection.
struct ClientCertificate: Sendable {
    /// The leaf's subject, one-line RFC 2253 (`CN=build-agent-7,O=Example`).
    let subject: String
    /// `Client-Cert`: the leaf's DER as a structured-field byte sequence (`:BASE64:`).
    let field: String
    /// `Client-Cert-Chain`: the other certificates the client presented, in its order, each a byte
    /// sequence; nil when it presented the leaf alone.
    let chainField: String?

    /// The certificate of `presentedChain`, leaf first (as the client sent it).
    init(presentedChain: [Certificate]) {
        let leaf = presentedChain[0]
        subject = leaf.subject
        field = Self.byteSequence(leaf)
        let rest = presentedChain.dropFirst()
        chainField = rest.isEmpty ? nil : rest.map(Self.byteSequence).joined(separator: ", ")
    }

    /// RFC 8941 §3.3.5: base64 between colons.
    private static func byteSequence(_ certificate: Certificate) -> String {
        ":" + Data(certificate.derBytes).base64EncodedString() + ":"
    }
}
