import NIOConcurrencyHelpers
import NIOPosix

/// Delivers a message to the first delegate that implements it.
///
/// Swift protocols have no optional methods, so the default implementations of notification
/// methods call ``markUnanswered()``: the dispatcher calls the task's delegate, and if that
/// call only reached the default, it calls the session delegate next. Delegate calls are
/// synchronous on the task's event loop, so a per-thread flag is enough.
enum DelegateDispatch {
    private final class Flag {
        var unanswered = false
    }

    // ThreadSpecificVariable is per-thread by construction, hence safe to share.
    nonisolated(unsafe) private static let flag = ThreadSpecificVariable<Flag>()

    /// Called by default implementations: the message was not handled.
    static func markUnanswered() {
        currentFlag.unanswered = true
    }

    private static var currentFlag: Flag {
        if let flag = flag.currentValue { return flag }
        let fresh = Flag()
        flag.currentValue = fresh
        return fresh
    }

    /// Calls `body` on each receiver in turn until one implements the message.
    /// Returns whether any did.
    @discardableResult
    static func notify<D>(_ receivers: DelegatePair<D>, _ body: (D) -> Void) -> Bool {
        guard let first = receivers.first else { return false }
        let flag = currentFlag
        flag.unanswered = false
        body(first)
        if !flag.unanswered { return true }
        flag.unanswered = false
        guard let second = receivers.second else { return false }
        body(second)
        defer { flag.unanswered = false }
        return !flag.unanswered
    }
}
