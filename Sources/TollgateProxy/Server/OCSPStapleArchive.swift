import Foundation
import TollgateCache
import TollgateStore
import TollgateTLS

/// The OCSP responses the listeners fetched, kept on disk (`ocsp/` in the data directory, an LMDB
/// environment): a restart staples the last good response at once, while it is current, instead
/// of stapling nothing until the responder answers — with a must-staple certificate, clients that
/// honour it refuse every handshake meanwhile, and a responder that is down at the restart (they
/// are, now and then) kept them refused until it came back. HAProxy loads its `.ocsp` files at
/// start for the same reason.
///
/// One database, `responses`: key the hex SHA-256 of the certificate's issuer and serial number,
/// value the DER response as fetched. What is read back is checked again as a fetched answer is
/// (about the certificate, signed by its issuer, current) before anything staples it. The
/// responses are public (any client of the listener gets them), so the files have LMDB's usual
/// mode; a write that fails costs only the head start, and is logged.
public final class OCSPStapleArchive: Sendable {
    /// The environment's directory.
    public let directory: String
    private let environment: TollgateStore.Environment
    private let database: Database

    /// Opens (or creates) the archive in `directory`.
    public init(directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        self.directory = directory
        environment = try TollgateStore.Environment(path: directory, options: EnvironmentOptions(mapSize: 4 << 20))
        database = try environment.openDatabase(named: "responses")
    }

    /// The response kept for `chain`'s leaf, checked against `chain` as a fetched one is: nil
    /// when none is kept, or the one kept is no longer good (out of date, or not about this
    /// certificate and issuer any more).
    func response(for chain: [Certificate], at date: Date = Date()) -> OCSPResponse? {
        let key = Self.key(for: chain[0])
        guard let der = try? environment.read({ txn in try txn.withValue(forKey: key, in: database) { Array($0) } }) ?? nil,
            let response = try? OCSPResponse(verifying: der, for: chain), response.isCurrent(at: date)
        else { return nil }
        return response
    }

    /// Keeps `response` as the one for `certificate`, in place of any before.
    func keep(_ response: OCSPResponse, for certificate: Certificate) throws {
        let key = Self.key(for: certificate)
        try environment.write { txn in try txn.put(key, response.der, in: database) }
    }

    /// The key of `certificate`'s response: its place (issuer and serial) hashed, so a long
    /// issuer name stays within LMDB's key size.
    private static func key(for certificate: Certificate) -> String {
        SHA256.hex(SHA256.hash(Array("\(certificate.issuer)\u{0}\(certificate.serialNumber)".utf8)))
    }
}
