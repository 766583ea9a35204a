import NIOConcurrencyHelpers
import TollgateTLS

/// The client identities a session's delegate chose in answer to client-certificate challenges,
/// per host and port: later connections to that origin present it from the start (the pool's TLS
/// context for the origin includes it), as `URLCredentialStorage` keeps a client credential for
/// its protection space.
final class ClientIdentityChoices: Sendable {
    private let chosen = NIOLockedValueBox<[String: Identity]>([:])

    /// The identity chosen for `host:port`, if any.
    func identity(host: String, port: Int) -> Identity? {
        chosen.withLockedValue { $0[Self.key(host, port)] }
    }

    /// Loads the PEM files of `credential` and keeps the identity for `host:port`.
    /// - Throws: `secureConnectionFailed` naming the file that cannot be used.
    func choose(_ credential: Credential, host: String, port: Int) throws(SessionError) {
        guard let files = credential.clientIdentity else {
            throw SessionError(.clientCertificateRequired, nil, "the answer to the client-certificate challenge has no identity")
        }
        let identity: Identity
        do {
            identity = try Identity(
                certificateChain: try Certificate.bundle(pemFile: files.certificatePath),
                privateKey: try PrivateKey(pemFile: files.keyPath)
            )
        } catch {
            throw SessionError(
                .secureConnectionFailed, nil,
                "the client identity \(files.certificatePath) / \(files.keyPath) cannot be used: \(error)"
            )
        }
        chosen.withLockedValue { $0[Self.key(host, port)] = identity }
    }

    private static func key(_ host: String, _ port: Int) -> String { "\(host.lowercased()):\(port)" }
}
