public import Foundation
import Synchronization

extension Session {
    /// The shared session (`URLSession.shared`): a default configuration with the shared stores
    /// (``CookieStorage/shared``, ``CredentialStorage/shared``, ``ResponseCache/shared``) and no
    /// delegate, so tasks made on it report through completion handlers or `async` calls. Made on
    /// first use. It cannot be invalidated: ``finishTasksAndInvalidate()`` and
    /// ``invalidateAndCancel()`` do nothing on it.
    public static var shared: Session { sharedSession }

    /// Whether this is ``shared``.
    var isShared: Bool { sharedIdentity.withLock { $0 } == ObjectIdentifier(self) }
}

private let sharedIdentity = Mutex<ObjectIdentifier?>(nil)

private let sharedSession: Session = {
    let session = Session(configuration: .sharedDefault)
    sharedIdentity.withLock { $0 = ObjectIdentifier(session) }
    return session
}()

extension SessionConfiguration {
    /// The configuration of ``Session/shared``: `.default` with the shared stores attached and
    /// cookies accepted from the main document's domain.
    public static var sharedDefault: SessionConfiguration {
        var configuration = SessionConfiguration.default
        configuration.cookieStorage = CookieStorage.shared
        configuration.credentialStorage = CredentialStorage.shared
        configuration.responseCache = ResponseCache.shared
        return configuration
    }
}

extension CookieStorage {
    /// The process's shared cookie store (`HTTPCookieStorage.shared`), in memory.
    public static let shared = CookieStorage()
}

extension CredentialStorage {
    /// The process's shared credential store (`URLCredentialStorage.shared`), in memory.
    public static let shared = CredentialStorage()
}

extension ResponseCache {
    /// The process's shared cache (`URLCache.shared`): 64 MiB in an LMDB environment under the
    /// temporary directory, one per user (`tollgate-shared-cache-UID`); nil when it cannot be
    /// opened (the shared session then does not cache).
    public static let shared: ResponseCache? = {
        let path = NSTemporaryDirectory() + "tollgate-shared-cache-\(getuid())"
        do {
            try FileManager.default.createDirectory(
                atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700]
            )
            return try ResponseCache(path: path, maxSize: 64 << 20)
        } catch {
            return nil
        }
    }()
}
