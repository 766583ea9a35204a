#ifndef TOLLGATE_TICK_CLOCK_H
#define TOLLGATE_TICK_CLOCK_H

#include <stdint.h>

/// The current thread's clock readings for the event it is handling (see TickClock.swift).
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
} tollgate_tick_state;

/// This thread's state (valid for the thread's lifetime).
tollgate_tick_state *_Nonnull tollgate_tick_state_of_thread(void);

#endif
