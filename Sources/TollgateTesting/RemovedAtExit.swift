import Foundation
import Synchronization

/// Files a test process made under the temporary directory for its whole life (a test CA's PEM,
/// which configurations and child processes read by path), removed when the process exits.
///
/// Not removed when their owner is released: Swift may end a value's lifetime at its last use,
/// before a child process reads the path taken from it.
public enum RemovedAtExit {
    private static let paths = Mutex<[String]>([])
    private static let registered = Mutex(false)

    /// Removes `path` when the process exits normally.
    public static func add(_ path: String) {
        paths.withLock { $0.append(path) }
        let first = registered.withLock { done in
            defer { done = true }
            return !done
        }
        if first { atexit { RemovedAtExit.removeAll() } }
    }

    private static func removeAll() {
        for path in paths.withLock({ $0 }) { unlink(path) }
    }
}
