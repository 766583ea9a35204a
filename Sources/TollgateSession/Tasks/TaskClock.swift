import NIOCore

/// Where a session's tasks read the time for their request and resource timeouts.
///
/// A session reads the loop's ``TickClock`` (one reading per event) unless it was made with a clock
/// of its own (``Session/init(configuration:delegate:eventLoopGroup:taskClock:)``): a test moves
/// such a clock by hand and the task judges its deadlines by it, so a timeout is tested without
/// waiting for it. The loop's watchdog still wakes the task at the real deadline; with a clock of
/// its own, the test wakes it (`SessionTask.deadlinePassed()`).
package protocol TaskClock: AnyObject, Sendable {
    /// The current time.
    var now: NIODeadline { get }
}
