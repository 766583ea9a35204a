#ifndef TOLLGATE_LOOP_THREAD_H
#define TOLLGATE_LOOP_THREAD_H

#include <stdint.h>

/// Everything TollgateLoop keeps per thread, in one C thread-local (see LoopThread.swift).
/// Swift has no thread-local variables of its own; a C one costs one TLS access, where a
/// pthread key or a ThreadSpecificVariable costs a call and a retain, as much as the clock read
/// it would save.
typedef struct {
    /// How many handlers on this thread are inside an event (nested events share one reading).
    int32_t depth;
    /// Whether `monotonic` / `wall` hold this event's reading yet.
    int32_t has_monotonic;
    int32_t has_wall;
    /// Uptime in nanoseconds, as NIODeadline counts it.
    uint64_t monotonic;
    /// Seconds since the reference date of Foundation's Date.
    double wall;
    /// The thread's LoopDeadlines, retained (an Unmanaged reference); released at thread exit.
    void *_Nullable deadlines;
} tollgate_loop_thread_state;

/// Releases an object kept in a thread's state (a Swift `Unmanaged.release`).
typedef void (*tollgate_loop_release)(void *_Nonnull object);

/// This thread's state (valid for the thread's lifetime).
tollgate_loop_thread_state *_Nonnull tollgate_loop_thread(void);

/// Arranges for `release(state->deadlines)` to run when the calling thread exits, as
/// ThreadSpecificVariable would. Call it when storing the first object on a thread; `release` is
/// the same function every time.
void tollgate_loop_thread_release_at_exit(tollgate_loop_release _Nonnull release);

#endif
