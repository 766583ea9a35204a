import NIOConcurrencyHelpers
import NIOCore

/// At most one log line per ``interval``: for conditions that recur at every accept or
/// connection while they last (a shortage of descriptors, a listener at its limit), which the
/// log should say, not repeat.
final class LogInterval: Sendable {
    /// The least time between two lines.
    let interval: TimeAmount
    private let last = NIOLockedValueBox<NIODeadline?>(nil)

    init(_ interval: TimeAmount) {
        self.interval = interval
    }

    /// Whether a line may be written now (the next is then due an ``interval`` later).
    func isDue(now: NIODeadline = .now()) -> Bool {
        last.withLockedValue { last in
            guard last.map({ now - $0 >= interval }) ?? true else { return false }
            last = now
            return true
        }
    }
}
