#if TOLLGATE_TSAN
import NIOConcurrencyHelpers

/// This module's `Mutex` in the ThreadSanitizer build (`make test-tsan` compiles with
/// `-DTOLLGATE_TSAN`): a pthread mutex (`NIOLockedValueBox`) in place of `Synchronization.Mutex`.
///
/// Why: on Linux, `Synchronization.Mutex` takes and hands over a *contended* lock with
/// `FUTEX_LOCK_PI`/`FUTEX_UNLOCK_PI` system calls made in `_lockSlow`/`_unlockSlow`, inside the
/// uninstrumented libswiftSynchronization; only its uncontended fast path (an atomic exchange inlined
/// here) is visible. TSan then sees no release→acquire between two threads that held the lock one
/// after the other and reports the accesses made inside `withLock` (e.g. `Session.makeTask`) as
/// races. TSan intercepts pthread mutexes, so with this lock it checks what the lock protects instead
/// of being silenced by a suppression that would hide real races in the same functions.
///
/// Declared in this module, it shadows the imported `Synchronization.Mutex` in every file here;
/// every other build (debug, release, ASan) uses the real one (docs/performance.md: a `Mutex` stored
/// inline is one allocation fewer per task).
struct Mutex<Value>: ~Copyable, @unchecked Sendable {
    // Sendable as `Synchronization.Mutex` is: the value is reached only under the lock.
    private let box: NIOLockedValueBox<Value>

    init(_ value: consuming sending Value) {
        box = NIOLockedValueBox(value)
    }

    borrowing func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try box.withLockedValue(body)
    }
}
#endif
