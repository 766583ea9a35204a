import Synchronization

/// How many exchanges of a listener have begun and not yet finished (been logged).
///
/// A graceful shutdown waits for the count to reach zero after the connections have closed: an
/// exchange whose client went away is told so on its connection's close, and its task completes
/// (and the exchange is logged) a moment later. Flushing the access log before then lost its line.
final class ExchangesInFlight: Sendable {
    private let count = Atomic<Int>(0)

    init() {}

    /// An exchange began.
    func begin() {
        count.add(1, ordering: .relaxed)
    }

    /// An exchange finished (its access-log line is recorded).
    func end() {
        count.subtract(1, ordering: .releasing)
    }

    /// Whether every exchange begun has finished.
    var isEmpty: Bool { count.load(ordering: .acquiring) <= 0 }
}
