import Foundation

/// A key session tickets are encrypted and authenticated with (RFC 5077's `key_name`, an AES key
/// and an HMAC-SHA256 secret), loaded from a file of random bytes as nginx's
/// `ssl_session_ticket_key` reads it, so that several servers — or one server across restarts —
/// resume each other's sessions:
///
/// | file size | name | HMAC secret | AES key (CBC) |
/// |---|---|---|---|
/// | 80 bytes (`openssl rand 80`) | bytes 0–15 | 16–47 (32 bytes) | 48–79: AES-256 |
/// | 48 bytes (`openssl rand 48`) | bytes 0–15 | 32–47 (16 bytes) | 16–31: AES-128 |
///
/// Its description names the key by its name (sent in the clear in every ticket), never its secrets.
public struct SessionTicketKey: Hashable, Sendable, CustomStringConvertible {
    /// The 16 bytes a ticket names its key by.
    public let name: [UInt8]
    /// The HMAC-SHA256 secret (32 or 16 bytes).
    let hmacSecret: [UInt8]
    /// The AES-CBC key (32 bytes: AES-256; 16 bytes: AES-128).
    let aesKey: [UInt8]

    /// Why a ticket key file cannot be used.
    public struct FormatError: Error, CustomStringConvertible {
        public let description: String
    }

    /// Reads a key from the 80 or 48 bytes of a key file.
    /// - Throws: ``FormatError`` when it has another size.
    public init(bytes: [UInt8]) throws {
        switch bytes.count {
        case 80:
            name = Array(bytes[0..<16])
            hmacSecret = Array(bytes[16..<48])
            aesKey = Array(bytes[48..<80])
        case 48:
            name = Array(bytes[0..<16])
            aesKey = Array(bytes[16..<32])
            hmacSecret = Array(bytes[32..<48])
        default:
            throw FormatError(description: "a session ticket key is 80 bytes (openssl rand 80 > FILE) or 48, not \(bytes.count)")
        }
    }

    /// Reads the key file at `path`.
    /// - Throws: ``FormatError`` naming the file when it cannot be read or has the wrong size.
    public init(contentsOf path: String) throws {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw FormatError(description: "cannot read the session ticket key \(path): \(error.localizedDescription)")
        }
        do {
            try self.init(bytes: Array(data))
        } catch let error as FormatError {
            throw FormatError(description: "\(path): \(error.description)")
        }
    }

    /// Whether the key is AES-256 (an 80-byte file) rather than AES-128.
    var isAES256: Bool { aesKey.count == 32 }

    public var description: String {
        "session ticket key " + name.map { String(format: "%02x", $0) }.joined()
    }
}
