#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A `pthread_rwlock_t`: read transactions share it, growing the map or closing takes it alone.
///
/// Not recursive for shared holders on every platform (Darwin prefers waiting writers),
/// so `Environment` takes it only at the outermost read on a thread.
final class ReadWriteLock: @unchecked Sendable {
    // @unchecked: the lock lives at a stable heap address and pthread makes it thread-safe.
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>

    init() {
        lock = .allocate(capacity: 1)
        lock.initialize(to: pthread_rwlock_t())
        let rc = pthread_rwlock_init(lock, nil)
        precondition(rc == 0, "pthread_rwlock_init failed: \(rc)")
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deinitialize(count: 1)
        lock.deallocate()
    }

    /// Takes the lock shared with other readers.
    func lockShared() {
        let rc = pthread_rwlock_rdlock(lock)
        precondition(rc == 0, "pthread_rwlock_rdlock failed: \(rc)")
    }

    /// Takes the lock alone, waiting for every shared holder to leave.
    func lockExclusive() {
        let rc = pthread_rwlock_wrlock(lock)
        precondition(rc == 0, "pthread_rwlock_wrlock failed: \(rc)")
    }

    /// Releases the lock, whichever way it was taken.
    func unlock() {
        let rc = pthread_rwlock_unlock(lock)
        precondition(rc == 0, "pthread_rwlock_unlock failed: \(rc)")
    }
}
