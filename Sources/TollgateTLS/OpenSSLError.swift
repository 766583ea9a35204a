internal import COpenSSL

/// An OpenSSL operation failed.
///
/// The ``message`` says what Tollgate was doing (for example "reading a PEM certificate") followed by
/// the entries OpenSSL left on this thread's error queue, which the error drains when it is created, so
/// a later failure never reports an earlier one's entries. Messages never contain key material or
/// passphrases.
///
/// Compare with the static members to tell kinds apart: equality looks at the kind only.
///
/// ```swift
/// #expect(throws: OpenSSLError.invalidPEM) { try Certificate(pem: "nonsense") }
/// ```
public struct OpenSSLError: Error, Hashable, CustomStringConvertible, Sendable {
    private enum Code: String, Sendable {
        case invalidPEM
        case invalidDER
        case invalidArgument
        case keyGeneration
        case certificateCreation
        case signing
        case trustStore
        case io
    }

    private let code: Code

    /// What was being done, then the drained OpenSSL error queue (entries joined by "; ").
    public let message: String

    private init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    /// PEM text could not be parsed (no BEGIN line, bad base64, or not the expected object).
    public static let invalidPEM = OpenSSLError(code: .invalidPEM, message: "invalid PEM")
    /// DER bytes could not be parsed.
    public static let invalidDER = OpenSSLError(code: .invalidDER, message: "invalid DER")
    /// An argument was rejected before OpenSSL was asked (for example a host name with a comma).
    public static let invalidArgument = OpenSSLError(code: .invalidArgument, message: "invalid argument")
    /// Generating a key pair failed.
    public static let keyGeneration = OpenSSLError(code: .keyGeneration, message: "key generation failed")
    /// Building a certificate (names, validity, extensions) failed.
    public static let certificateCreation = OpenSSLError(
        code: .certificateCreation,
        message: "certificate creation failed"
    )
    /// Signing a certificate failed.
    public static let signing = OpenSSLError(code: .signing, message: "signing failed")
    /// Building a trust store (system roots, CA files) failed.
    public static let trustStore = OpenSSLError(code: .trustStore, message: "trust store setup failed")
    /// Reading or writing a file failed.
    public static let io = OpenSSLError(code: .io, message: "I/O failed")

    /// An error of `kind`'s kind whose message is `context` followed by the drained OpenSSL error queue.
    init(_ kind: OpenSSLError, _ context: String) {
        let queue = OpenSSLError.drainErrorQueue()
        self.init(code: kind.code, message: queue.isEmpty ? context : "\(context): \(queue.joined(separator: "; "))")
    }

    /// An error of `kind`'s kind with exactly `message`; clears the OpenSSL error queue without reporting it.
    init(_ kind: OpenSSLError, exactly message: String) {
        tg_ERR_clear_error()
        self.init(code: kind.code, message: message)
    }

    /// Takes every entry off this thread's OpenSSL error queue, oldest first.
    static func drainErrorQueue() -> [String] {
        var entries: [String] = []
        while true {
            let code = tg_ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            entries.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return entries
    }

    /// A short, stable name of the kind, without details (fit for a metric label).
    public var shortDescription: String { self.code.rawValue }

    /// The message.
    public var description: String { self.message }

    /// Errors are equal when they are of the same kind, whatever their messages.
    public static func == (lhs: OpenSSLError, rhs: OpenSSLError) -> Bool { lhs.code == rhs.code }

    /// Hashes the kind only, to agree with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(self.code) }
}
