import Foundation

/// A value guarded by a lock.
///
/// `Synchronization.Mutex` needs macOS 15 (the package declares macOS 14) and NIO's
/// `NIOLockedValueBox` lives in NIOConcurrencyHelpers, which this target does not depend
/// on; so, like `TollgateStore`, this uses an `NSLock`.
final class Locked<Value>: @unchecked Sendable {
    // @unchecked: `value` is only touched while holding `lock`.
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
