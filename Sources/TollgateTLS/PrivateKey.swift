internal import COpenSSL
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A private key (EC or RSA) held by OpenSSL.
///
/// Keys are generated here (EC P-256 by default: fast to generate, which matters when minting a leaf per
/// intercepted host) or read from PEM in PKCS#8 (`BEGIN PRIVATE KEY`) or traditional (`BEGIN EC PRIVATE
/// KEY`, `BEGIN RSA PRIVATE KEY`) form. Encrypted PEM is refused rather than prompting for a passphrase.
/// Written keys are PKCS#8; key files are created with mode 0600 from the start.
///
/// Nothing this type prints or throws contains key material.
///
/// `@unchecked Sendable`: the wrapped `EVP_PKEY` is never modified after creation; OpenSSL locks the
/// provider-side caches it fills while signing, so concurrent use for signing is safe.
public final class PrivateKey: @unchecked Sendable {
    /// The algorithm and size of a key to generate.
    public struct Algorithm: Hashable, Sendable, CustomStringConvertible {
        private enum Kind: Hashable, Sendable {
            case ecP256
            case rsa(bits: Int)
        }

        private let kind: Kind

        /// ECDSA on NIST P-256 (prime256v1): the default.
        public static let ecP256 = Algorithm(kind: .ecP256)
        /// RSA with a 2048-bit modulus.
        public static let rsa2048 = Algorithm(kind: .rsa(bits: 2048))
        /// RSA with a `bits`-bit modulus; generation refuses fewer than 2048 bits.
        public static func rsa(bits: Int) -> Algorithm { Algorithm(kind: .rsa(bits: bits)) }

        /// `EC P-256` or `RSA <bits>`.
        public var description: String {
            switch self.kind {
            case .ecP256: "EC P-256"
            case .rsa(let bits): "RSA \(bits)"
            }
        }

        func generate() throws -> OpaquePointer {
            tg_ERR_clear_error()
            switch self.kind {
            case .ecP256:
                guard let key = tg_EVP_EC_gen("P-256") else {
                    throw OpenSSLError(.keyGeneration, "generating an EC P-256 key")
                }
                return key
            case .rsa(let bits):
                guard bits >= 2048, bits <= 16384 else {
                    throw OpenSSLError(.invalidArgument, exactly: "RSA keys must have 2048 to 16384 bits, not \(bits)")
                }
                guard let key = tg_EVP_RSA_gen(UInt32(bits)) else {
                    throw OpenSSLError(.keyGeneration, "generating an RSA \(bits) key")
                }
                return key
            }
        }
    }

    /// The owned `EVP_PKEY*`; freed on deinit.
    let pkey: OpaquePointer

    /// Takes ownership of one reference to `pkey`.
    init(taking pkey: OpaquePointer) {
        self.pkey = pkey
    }

    deinit {
        EVP_PKEY_free(self.pkey)
    }

    /// Generates a new key pair.
    ///
    /// - Parameter algorithm: ``Algorithm/ecP256`` unless given.
    /// - Throws: ``OpenSSLError/keyGeneration``, or ``OpenSSLError/invalidArgument`` for a too-small RSA size.
    public convenience init(generating algorithm: Algorithm = .ecP256) throws {
        self.init(taking: try algorithm.generate())
    }

    /// Reads a private key from PEM text (PKCS#8 or traditional; the first key block).
    ///
    /// - Throws: ``OpenSSLError/invalidPEM``, also for encrypted keys.
    public convenience init(pem: String) throws {
        try self.init(pemBytes: Array(pem.utf8))
    }

    /// Reads a private key from PEM bytes (PKCS#8 or traditional; the first key block).
    ///
    /// - Throws: ``OpenSSLError/invalidPEM``, also for encrypted keys.
    public convenience init(pemBytes: [UInt8]) throws {
        let pkey = try MemoryBIO.withReading(pemBytes) { try PrivateKey.read(from: $0, source: "PEM private key") }
        self.init(taking: pkey)
    }

    /// Reads a private key from a PEM file (PKCS#8 or traditional).
    ///
    /// - Throws: ``OpenSSLError/io`` when the file cannot be opened, ``OpenSSLError/invalidPEM`` otherwise.
    public convenience init(pemFile path: String) throws {
        tg_ERR_clear_error()
        guard let bio = BIO_new_file(path, "r") else {
            throw OpenSSLError(.io, "opening private key file \(path)")
        }
        defer { BIO_free(bio) }
        self.init(taking: try PrivateKey.read(from: bio, source: path))
    }

    private static func read(from bio: OpaquePointer, source: String) throws -> OpaquePointer {
        tg_ERR_clear_error()
        var askedForPassphrase = false
        guard let pkey = PEM_read_bio_PrivateKey(bio, nil, noPassphrase, &askedForPassphrase) else {
            if askedForPassphrase {
                throw OpenSSLError(.invalidPEM, exactly: "\(source) is encrypted; Tollgate needs an unencrypted key")
            }
            throw OpenSSLError(.invalidPEM, "reading \(source)")
        }
        return pkey
    }

    /// The key in PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), unencrypted.
    ///
    /// The returned string is the secret: keep it out of logs.
    public func pkcs8PEM() throws -> String {
        String(decoding: try self.withPKCS8PEM { Array($0) }, as: UTF8.self)
    }

    /// Writes the key as unencrypted PKCS#8 PEM to a new file with mode 0600.
    ///
    /// The file is created with `open(2)` using `O_CREAT | O_EXCL` and mode 0600 and then `fchmod`ed to
    /// 0600 before any byte is written, so there is no moment when the key is readable by others whatever
    /// the umask. With `overwrite`, the key goes to a new temporary file in the same directory that is
    /// then renamed over `path`, so readers see the old key or the new one, never a partial file.
    ///
    /// - Parameters:
    ///   - path: the file to create.
    ///   - overwrite: replace an existing file; when false (the default) an existing file is an error.
    /// - Throws: ``OpenSSLError/io`` naming the path and the system error.
    public func write(toPEMFile path: String, overwrite: Bool = false) throws {
        try self.withPKCS8PEM { pem in
            guard overwrite else {
                try KeyFile.create(at: path, contents: pem)
                return
            }
            let directory = (path as NSString).deletingLastPathComponent
            let name = (path as NSString).lastPathComponent
            let random = UInt64.random(in: 0...UInt64.max)
            let temporary = (directory.isEmpty ? "" : directory + "/") + ".\(name).\(String(random, radix: 16)).tmp"
            try KeyFile.create(at: temporary, contents: pem)
            guard rename(temporary, path) == 0 else {
                let reason = String(cString: strerror(errno))
                unlink(temporary)
                throw OpenSSLError(.io, exactly: "replacing \(path): \(reason)")
            }
        }
    }

    /// Runs `body` with the PKCS#8 PEM bytes in OpenSSL secure memory, cleared when `body` returns.
    private func withPKCS8PEM<T>(_ body: (UnsafeBufferPointer<UInt8>) throws -> T) throws -> T {
        tg_ERR_clear_error()
        guard let bio = BIO_new(BIO_s_secmem()) else {
            throw OpenSSLError(.io, "allocating a memory BIO")
        }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PKCS8PrivateKey(bio, self.pkey, nil, nil, 0, nil, nil) == 1 else {
            throw OpenSSLError(.invalidArgument, "encoding a private key as PKCS#8")
        }
        var pointer: UnsafeMutablePointer<CChar>? = nil
        let count = tg_BIO_get_mem_data(bio, &pointer)
        guard count > 0, let pointer else {
            throw OpenSSLError(.io, exactly: "encoding a private key produced no output")
        }
        return try pointer.withMemoryRebound(to: UInt8.self, capacity: count) {
            try body(UnsafeBufferPointer(start: $0, count: count))
        }
    }

    /// The DER SubjectPublicKeyInfo of the key's public half (`i2d_PUBKEY`).
    ///
    /// - Throws: ``OpenSSLError`` if OpenSSL cannot encode the key.
    public var publicKeySPKIDER: [UInt8] {
        get throws {
            tg_ERR_clear_error()
            var pointer: UnsafeMutablePointer<UInt8>? = nil
            let length = i2d_PUBKEY(self.pkey, &pointer)
            guard length > 0, let pointer else { throw OpenSSLError(.invalidArgument, "encoding a public key") }
            defer { tg_OPENSSL_free(pointer) }
            return Array(UnsafeBufferPointer(start: pointer, count: Int(length)))
        }
    }

    /// The pin of the key's public half: equal to ``Certificate/spkiPin`` of any certificate for this key.
    ///
    /// - Throws: ``OpenSSLError`` if OpenSSL cannot encode or hash the key.
    public var spkiPin: SPKIPin {
        get throws { try SPKIPin(spkiDER: self.publicKeySPKIDER) }
    }

    /// The key type as OpenSSL names it (`EC`, `RSA`).
    public var typeName: String {
        EVP_PKEY_get0_type_name(self.pkey).map { String(cString: $0) } ?? "unknown"
    }

    /// The key size in bits (256 for P-256, 2048 for RSA 2048).
    public var bits: Int { Int(EVP_PKEY_get_bits(self.pkey)) }
}

extension PrivateKey: CustomStringConvertible {
    /// The type and size only, never key material: `PrivateKey(EC 256)`.
    public var description: String { "PrivateKey(\(self.typeName) \(self.bits))" }
}
