import Foundation
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
    /// The process's shared cache (`URLCache.shared`, which Apple keeps in the user's caches
    /// directory): 64 MiB in an LMDB environment at ``sharedPath(environment:)``; nil when it
    /// cannot be opened, or when its directory is not the user's own (the shared session then
    /// does not cache).
    public static let shared: ResponseCache? = openShared(environment: ProcessInfo.processInfo.environment)

    /// `$XDG_CACHE_HOME/tollgate-shared-session` when `XDG_CACHE_HOME` is set and absolute, else
    /// `$HOME/.cache/tollgate-shared-session` (the XDG base directory rules; beside, not inside,
    /// the proxy's default cache `…/tollgate`, which is a store of its own).
    static func sharedPath(environment: [String: String]) -> String {
        let base: String
        if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
            base = xdg
        } else {
            base = (environment["HOME"] ?? NSHomeDirectory()) + "/.cache"
        }
        return (base as NSString).appendingPathComponent("tollgate-shared-session")
    }

    /// Opens the shared cache at ``sharedPath(environment:)``, creating its directory (0700).
    static func openShared(environment: [String: String]) -> ResponseCache? {
        let path = sharedPath(environment: environment)
        do {
            try FileManager.default.createDirectory(
                atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700]
            )
            guard isOwnPrivateDirectory(path) else { return nil }
            return try ResponseCache(path: path, maxSize: 64 << 20)
        } catch {
            return nil
        }
    }

    /// Whether `path` is a directory, not a symbolic link, owned by this user, and (made) closed
    /// to everyone else. What one cache stores, every task of the process is served: a directory
    /// another user made, or can write in, would let them choose those responses (the cache was
    /// under the shared temporary directory at a predictable name until session 23).
    static func isOwnPrivateDirectory(_ path: String) -> Bool {
        // FileManager's attributes are the link's own (lstat), not its target's.
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
            attributes[.type] as? FileAttributeType == .typeDirectory,
            (attributes[.ownerAccountID] as? NSNumber)?.uint32Value == getuid(),
            let permissions = (attributes[.posixPermissions] as? NSNumber)?.intValue
        else { return false }
        if permissions & 0o077 != 0 { return chmod(path, 0o700) == 0 }
        return true
    }
}
