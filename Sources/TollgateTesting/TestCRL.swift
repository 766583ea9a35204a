public import Foundation
public import TollgateTLS

/// Certificate revocation lists for tests, issued by the `openssl ca` command (not by Tollgate's
/// own code): a CA's database in a temporary directory, certificates revoked into it, and a CRL
/// written from it as a PEM file.
public struct TestCRL: Sendable {
    /// The directory holding the CA's files, its database and the CRLs written.
    public let directory: URL
    private let authority: CertificateAuthority

    /// A database for `authority` (its certificate and key written into a new temporary directory).
    public init(authority: CertificateAuthority) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-crl-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        RemovedAtExit.add(directory.path)
        self.authority = authority
        try authority.certificate.pemString.write(to: directory.appendingPathComponent("ca.pem"), atomically: true, encoding: .utf8)
        try authority.privateKey.write(toPEMFile: directory.appendingPathComponent("ca.key").path)
        try Data().write(to: directory.appendingPathComponent("index.txt"))
        try "01\n".write(to: directory.appendingPathComponent("crlnumber"), atomically: true, encoding: .utf8)
        let configuration = """
            [ ca ]
            default_ca = test_ca
            [ test_ca ]
            database = \(directory.path)/index.txt
            crlnumber = \(directory.path)/crlnumber
            certificate = \(directory.path)/ca.pem
            private_key = \(directory.path)/ca.key
            default_md = sha256
            default_crl_days = 1

            """
        try configuration.write(to: directory.appendingPathComponent("ca.cnf"), atomically: true, encoding: .utf8)
    }

    /// Marks `certificate` revoked in the database (`openssl ca -revoke`).
    public func revoke(_ certificate: Certificate) async throws {
        let file = directory.appendingPathComponent("revoke-\(UUID().uuidString).pem").path
        try certificate.pemString.write(toFile: file, atomically: true, encoding: .utf8)
        try await openssl(["ca", "-batch", "-config", configurationPath, "-revoke", file])
    }

    /// Writes a CRL of what the database holds revoked to a new PEM file and returns its path
    /// (`openssl ca -gencrl`). `validFor` seconds until its `nextUpdate`: a day unless given; a
    /// list issued for one second is past its `nextUpdate` once two have gone by.
    public func writeCRL(validFor seconds: Int = 86_400, der: Bool = false) async throws -> String {
        let pem = directory.appendingPathComponent("crl-\(UUID().uuidString).pem").path
        try await openssl(["ca", "-batch", "-config", configurationPath, "-gencrl", "-crlsec", "\(seconds)", "-out", pem])
        guard der else { return pem }
        let derFile = directory.appendingPathComponent("crl-\(UUID().uuidString).crl").path
        try await openssl(["crl", "-in", pem, "-outform", "DER", "-out", derFile])
        return derFile
    }

    private var configurationPath: String { directory.appendingPathComponent("ca.cnf").path }

    private func openssl(_ arguments: [String]) async throws {
        let result = try await ChildProcess.run("/usr/bin/openssl", arguments)
        guard result.status == 0 else {
            throw TestCRLError(description: "openssl \(arguments.joined(separator: " ")) exited \(result.status): \(result.stderr)")
        }
    }
}

/// The `openssl` command refused what a ``TestCRL`` asked of it.
public struct TestCRLError: Error, CustomStringConvertible {
    public let description: String
}
