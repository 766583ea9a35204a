import NIOConcurrencyHelpers
public import TollgateTLS

/// The files trust settings name, each read once and kept: `client-identity` certificate and key
/// files, `roots` PEM bundles and `crls` revocation lists.
///
/// - A client identity is the certificate file (the leaf, then any intermediates) and the
///   unencrypted key file (PKCS#8 or traditional; PKCS#12 is not read), checked to belong together.
///   A failure is kept too, so every connection to the host fails the same way with the same
///   message (the TLS settings and the server-trust challenge both ask).
/// - A bundle's certificates, and a file's revocation lists, are kept once read; a file that cannot
///   be read is tried again at the next connection.
///
/// ``removeAll()`` forgets everything (a ``PolicyRuntime`` calls it on every apply or reload, so a
/// rotated or fixed file is read again after a reload). Messages name the files and say what is
/// wrong, never what a key file holds.
public final class TrustFileCache: Sendable {
    /// Why a file could not be used.
    public struct LoadError: Error, Hashable, Sendable, CustomStringConvertible {
        /// The files at fault (both of an identity whose key does not match its certificate).
        public let files: [String]
        /// One line naming the files at fault and the reason.
        public let message: String

        public var description: String { message }
    }

    private struct Entries {
        var identities: [HostRule.ClientIdentity: Result<Identity, LoadError>] = [:]
        var bundles: [String: [Certificate]] = [:]
        var revocationLists: [String: [CertificateRevocationList]] = [:]
    }

    private let entries = NIOLockedValueBox(Entries())

    /// An empty cache.
    public init() {}

    /// The identity for `setting`, loaded on first use.
    public func identity(for setting: HostRule.ClientIdentity) -> Result<Identity, LoadError> {
        if let known = entries.withLockedValue({ $0.identities[setting] }) { return known }
        // Read outside the lock; two connections racing both read, the first result is kept.
        let loaded = Self.load(setting)
        return entries.withLockedValue { entries in
            if let known = entries.identities[setting] { return known }
            entries.identities[setting] = loaded
            return loaded
        }
    }

    /// The certificates of the PEM bundle at `path`; a failure is not kept.
    public func certificates(inBundle path: String) -> Result<[Certificate], LoadError> {
        kept(path, \.bundles, "cannot read the roots bundle \(path)") { try Certificate.bundle(pemFile: $0) }
    }

    /// The revocation lists in the file at `path` (PEM or DER); a failure is not kept.
    public func revocationLists(inFile path: String) -> Result<[CertificateRevocationList], LoadError> {
        kept(path, \.revocationLists, "cannot read the CRLs in \(path)") { try CertificateRevocationList.lists(inFile: $0) }
    }

    /// What `read` makes of the file at `path`, kept in `table` once read (read outside the lock;
    /// two connections racing both read, the first result is kept); a failure, `what` and the
    /// reason, is not kept.
    private func kept<Item>(
        _ path: String,
        _ table: WritableKeyPath<Entries, [String: [Item]]>,
        _ what: String,
        _ read: (String) throws -> [Item]
    ) -> Result<[Item], LoadError> {
        if let known = entries.withLockedValue({ $0[keyPath: table][path] }) { return .success(known) }
        let loaded: [Item]
        do {
            loaded = try read(path)
        } catch {
            return .failure(LoadError(files: [path], message: "\(what): \(error)"))
        }
        return .success(
            entries.withLockedValue { entries in
                if let known = entries[keyPath: table][path] { return known }
                entries[keyPath: table][path] = loaded
                return loaded
            }
        )
    }

    /// Forgets every file read and every failure: they are read again when next needed.
    public func removeAll() {
        entries.withLockedValue { $0 = Entries() }
    }

    /// Reads the certificate chain and key of `setting` and checks that they belong together.
    static func load(_ setting: HostRule.ClientIdentity) -> Result<Identity, LoadError> {
        func failure(_ message: String, _ files: [String]) -> Result<Identity, LoadError> {
            .failure(LoadError(files: files, message: message))
        }
        let chain: [Certificate]
        do {
            chain = try Certificate.bundle(pemFile: setting.certificate)
        } catch {
            return failure("cannot load the client certificate \(setting.certificate): \(error)", [setting.certificate])
        }
        let key: PrivateKey
        do {
            key = try PrivateKey(pemFile: setting.key)
        } catch {
            return failure("cannot load the client key \(setting.key): \(error)", [setting.key])
        }
        do {
            return .success(try Identity(certificateChain: chain, privateKey: key))
        } catch {
            return failure(
                "the client key \(setting.key) does not belong to the certificate \(setting.certificate): \(error)",
                [setting.certificate, setting.key]
            )
        }
    }
}
