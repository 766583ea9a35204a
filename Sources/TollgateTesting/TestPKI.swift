public import Foundation
public import TollgateTLS

/// Certificates for tests, minted in-process: a CA, leaves for 127.0.0.1 and `localhost`, and
/// the CA's PEM in a temporary file (for configurations that take trust roots as files).
public struct TestPKI: Sendable {
    /// The test CA.
    public let authority: CertificateAuthority
    /// A server identity valid for 127.0.0.1 (IP SAN).
    public let server: Identity
    /// A path to the CA certificate in PEM (removed when the process exits).
    public let caFile: String

    /// Mints a new CA and leaf; `validity` and `notBeforeOffset` shape the leaf (an expired one, say).
    public init(
        commonName: String = "Tollgate Test CA",
        host: String = "127.0.0.1",
        validity: TimeInterval = 86_400,
        notBeforeOffset: TimeInterval = -3600
    ) throws {
        authority = try CertificateAuthority.create(commonName: commonName)
        server = try authority.issueLeaf(for: host, validity: validity, notBeforeOffset: notBeforeOffset)
        caFile = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-test-ca-\(UUID().uuidString).pem").path
        try authority.certificate.pemString.write(toFile: caFile, atomically: true, encoding: .utf8)
        RemovedAtExit.add(caFile)
    }

    /// Writes ``server``'s certificate and key as PEM files into `directory` (for a server that is
    /// not Tollgate's, such as Python's); returns their paths.
    public func writeServerFiles(in directory: URL) throws -> (certificate: String, key: String) {
        let certificate = directory.appendingPathComponent("server.pem").path
        let key = directory.appendingPathComponent("server.key").path
        try server.certificate.pemString.write(toFile: certificate, atomically: true, encoding: .utf8)
        try server.privateKey.write(toPEMFile: key)
        return (certificate, key)
    }

    /// A TLS server configuration presenting ``server``.
    public var serverConfiguration: TLSConfiguration {
        TLSConfiguration.makeServerConfiguration(identity: server)
    }

    /// Trust roots holding only this CA.
    public var trustRoots: TrustRoots { .certificates([authority.certificate]) }

    /// For a session's `tlsConfiguration`: the session's defaults for every host, trusting only
    /// this CA.
    public var sessionTLSConfiguration: @Sendable (String, Int, TLSConfiguration) -> TLSConfiguration {
        let roots = trustRoots
        return { _, _, defaults in
            var chosen = defaults
            chosen.trustRoots = roots
            return chosen
        }
    }
}
