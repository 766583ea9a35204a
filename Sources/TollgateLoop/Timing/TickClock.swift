import CTollgateLoop
import Foundation
import NIOCore

/// The time of the event a loop thread is handling, read from the system clock at most once per
/// event and kind (monotonic, wall) — as nginx reads its clock once per wake-up.
///
/// Why: one pass-through request used to read the clock 24 times (a request timeout restarted
/// at each step, the task's metrics dates, the connection's deadlines, the pool's idle time, the
/// access log), ~4 % of its CPU, all within the few microseconds of two events: the client's
/// request arriving and the origin's response arriving. The channel handlers that start such
/// work mark the event with ``begin()`` and ``end()``; everything that asks for the time inside
/// it gets the same reading. Outside an event (timer callbacks, other threads, tests) ``now``
/// and ``date`` read the clock each time.
///
/// Not for measuring durations inside one event: they come out as zero.
package enum TickClock {
    /// Marks the start of an event on this thread; events may nest (they then share a reading).
    @inline(__always)
    package static func begin() {
        tollgate_loop_thread().pointee.depth += 1
    }

    /// Marks the end of the event begun last; the readings are forgotten when the outermost ends.
    @inline(__always)
    package static func end() {
        let state = tollgate_loop_thread()
        state.pointee.depth -= 1
        if state.pointee.depth <= 0 {
            state.pointee.depth = 0
            state.pointee.has_monotonic = 0
            state.pointee.has_wall = 0
        }
    }

    /// The monotonic time of the current event (`NIODeadline.now()` when there is none).
    package static var now: NIODeadline {
        let state = tollgate_loop_thread()
        guard state.pointee.depth > 0 else { return .now() }
        if state.pointee.has_monotonic == 0 {
            state.pointee.monotonic = NIODeadline.now().uptimeNanoseconds
            state.pointee.has_monotonic = 1
        }
        return .uptimeNanoseconds(state.pointee.monotonic)
    }

    /// The wall-clock time of the current event (`Date()` when there is none).
    package static var date: Date {
        let state = tollgate_loop_thread()
        guard state.pointee.depth > 0 else { return Date() }
        if state.pointee.has_wall == 0 {
            state.pointee.wall = Date().timeIntervalSinceReferenceDate
            state.pointee.has_wall = 1
        }
        return Date(timeIntervalSinceReferenceDate: state.pointee.wall)
    }

    /// Whether this thread is inside an event (for tests).
    package static var isInEvent: Bool { tollgate_loop_thread().pointee.depth > 0 }
}
