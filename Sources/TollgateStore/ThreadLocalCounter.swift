#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An integer with one value per thread (a `pthread_key_t`), starting at 0 on every thread.
///
/// `Environment` counts the transactions each thread is inside, so that it can refuse the
/// nestings that would deadlock instead of hanging. Transaction closures are synchronous,
/// so the count on the calling thread is exact even with `MDB_NOTLS`. (The session's delegate
/// dispatch keeps its per-thread flag in one too.)
public final class ThreadLocalCounter: @unchecked Sendable {
    // @unchecked: each thread only ever sees its own slot.
    private let key: pthread_key_t

    /// A counter at 0 on every thread.
    public init() {
        var key = pthread_key_t()
        let rc = pthread_key_create(&key, nil)
        precondition(rc == 0, "pthread_key_create failed: \(rc)")
        self.key = key
    }

    deinit {
        pthread_key_delete(key)
    }

    /// The calling thread's value. The integer is stored as the pointer's bit pattern,
    /// so nothing is allocated and no destructor is needed.
    public var value: Int {
        get { Int(bitPattern: pthread_getspecific(key)) }
        set { pthread_setspecific(key, UnsafeRawPointer(bitPattern: newValue)) }
    }
}
