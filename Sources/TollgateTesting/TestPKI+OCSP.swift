public import Foundation
public import TollgateTLS

extension TestPKI {
    /// The DER OCSP response this CA's responder gives about `leaf` (``TestOCSPResponder``).
    public func ocspResponse(for leaf: Identity, status: TestOCSPResponder.Status = .good, validFor days: Int = 1) async throws -> [UInt8] {
        try await TestOCSPResponder.response(by: authority, for: leaf, status: status, validFor: days)
    }
}

/// OCSP responses for tests, made by the `openssl ocsp` command as a CA's responder makes them.
public enum TestOCSPResponder {
    /// What a response says.
    public enum Status: Sendable {
        case good, revoked
        /// A certificate the responder's index does not list.
        case unknown
    }

    /// The DER OCSP response `authority`'s responder gives about `leaf` (an identity it issued):
    /// an index of the CA's certificates, a request, the answer signed by the CA, its nextUpdate
    /// `validFor` days ahead (`-ndays`). With `signedBy`, another CA signs the answer (a forgery).
    public static func response(
        by authority: CertificateAuthority, for leaf: Identity, status: Status = .good, validFor days: Int = 1,
        signedBy signer: CertificateAuthority? = nil
    ) async throws -> [UInt8] {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-ocsp-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = { (name: String) in directory.appendingPathComponent(name).path }
        try authority.certificate.pemString.write(toFile: path("ca.pem"), atomically: true, encoding: .utf8)
        try authority.privateKey.write(toPEMFile: path("ca.key"))
        try leaf.certificate.pemString.write(toFile: path("leaf.pem"), atomically: true, encoding: .utf8)
        let signing = signer ?? authority
        try signing.certificate.pemString.write(toFile: path("signer.pem"), atomically: true, encoding: .utf8)
        try signing.privateKey.write(toPEMFile: path("signer.key"))
        // The index: one line per certificate (V valid, R revoked), expiry and revocation in
        // UTCTime, the serial in hex.
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyMMddHHmmss'Z'"
        let expiry = formatter.string(from: leaf.certificate.notAfter)
        let line: String
        switch status {
        case .good: line = "V\t\(expiry)\t\t\(leaf.certificate.serialNumber)\tunknown\t/CN=leaf\n"
        case .revoked: line = "R\t\(expiry)\t\(formatter.string(from: Date().addingTimeInterval(-60)))\t\(leaf.certificate.serialNumber)\tunknown\t/CN=leaf\n"
        case .unknown: line = ""
        }
        try line.write(toFile: path("index.txt"), atomically: true, encoding: .utf8)
        let request = try await ChildProcess.run(
            "/usr/bin/openssl", ["ocsp", "-issuer", path("ca.pem"), "-cert", path("leaf.pem"), "-no_nonce", "-reqout", path("request.der")]
        )
        guard request.status == 0 else { throw TestPKIError(description: "openssl ocsp (request): \(request.stderr)") }
        let answered = try await ChildProcess.run(
            "/usr/bin/openssl",
            [
                "ocsp", "-index", path("index.txt"), "-rsigner", path("signer.pem"), "-rkey", path("signer.key"), "-CA", path("ca.pem"),
                "-reqin", path("request.der"), "-respout", path("response.der"), "-ndays", "\(days)",
            ]
        )
        guard answered.status == 0 else { throw TestPKIError(description: "openssl ocsp (response): \(answered.stderr)") }
        return Array(try Data(contentsOf: URL(fileURLWithPath: path("response.der"))))
    }
}

/// A test certificate could not be made.
public struct TestPKIError: Error, CustomStringConvertible {
    public let description: String
}
