import Foundation
import NIOConcurrencyHelpers
import TollgateStore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An LMDB environment for a private store (credentials, cookies): its directory mode 0700,
/// `data.mdb` and `lock.mdb` mode 0600 whatever the umask or earlier modes, and one writer.
///
/// LMDB must not be opened twice on one directory in one process, so stores open through
/// ``shared(_:open:)``, which hands out the instance already open for a directory.
final class PrivateEnvironment: Sendable {
    let path: String
    let environment: Environment
    let writer: StoreWriter

    init(path: String) throws {
        self.path = path
        environment = try Environment(path: path, options: EnvironmentOptions(mapSize: 8 << 20, fileMode: 0o600))
        // Tighten what an earlier run, or another tool, may have left looser.
        chmod(path, 0o700)
        for file in ["data.mdb", "lock.mdb"] { chmod(path + "/" + file, 0o600) }
        writer = StoreWriter(environment: environment)
    }

    /// Waits until every write submitted so far has committed. Not on an event loop.
    func flush() {
        let done = DispatchSemaphore(value: 0)
        writer.submit({ _ in () }, completion: { _ in done.signal() })
        done.wait()
    }

    func close() {
        flush()
        writer.shutdown()
        environment.close()
    }

    /// The directory's canonical path (so `a/../b` and `b` share one instance).
    static func canonicalPath(_ path: String) -> String {
        var expanded = (path as NSString).expandingTildeInPath
        if !expanded.hasPrefix("/") { expanded = FileManager.default.currentDirectoryPath + "/" + expanded }
        return (expanded as NSString).standardizingPath
    }
}

/// Stores open in this process, by canonical directory.
enum OpenStores {
    private static let open = NIOLockedValueBox<[String: any Sendable]>([:])

    /// The store of type `T` open at `path`, or a new one made by `make` (remembered).
    static func shared<T: Sendable>(_ path: String, make: (String) throws -> T) throws -> T {
        let key = PrivateEnvironment.canonicalPath(path)
        return try open.withLockedValue { open in
            if let existing = open[key] {
                guard let typed = existing as? T else {
                    throw StoreOpenError(description: "\(key) is already open as another kind of store")
                }
                return typed
            }
            let made = try make(key)
            open[key] = made
            return made
        }
    }

    /// Forgets the store at `path` (it was closed).
    static func forget(_ path: String) {
        _ = open.withLockedValue { $0.removeValue(forKey: PrivateEnvironment.canonicalPath(path)) }
    }
}

/// A store directory that cannot be used.
struct StoreOpenError: Error, CustomStringConvertible {
    var description: String
}
