import NIOCore
import TollgateLoop

/// Where a client connection reads the time its timeouts run by. The proxy's is
/// ``TickConnectionClock``; tests give one they move by hand, so a timeout passes without a sleep.
protocol ConnectionClock {
    /// The current time.
    var now: NIODeadline { get }
}

/// The event loop's clock, read once per event (``TickClock``).
struct TickConnectionClock: ConnectionClock {
    var now: NIODeadline { TickClock.now }
}
