import TollgateStore

/// Delivers a message to the first delegate that implements it.
///
/// Swift protocols have no optional methods, so the default implementations of notification
/// methods call ``markUnanswered()``: the dispatcher calls the task's delegate, and if that
/// call only reached the default, it calls the session delegate next. Delegate calls are
/// synchronous on the task's event loop, so a per-thread flag is enough.
enum DelegateDispatch {
    /// The per-thread flag, 1 while "unanswered" is set: the thread's value of a pthread key, no
    /// object. (NIO's ThreadSpecificVariable holding a flag object retained and released that
    /// object at each access, several times per message.)
    private static let flag = ThreadLocalCounter()

    private static var unanswered: Bool {
        get { flag.value != 0 }
        set { flag.value = newValue ? 1 : 0 }
    }

    /// Called by default implementations: the message was not handled.
    static func markUnanswered() {
        unanswered = true
    }

    /// Calls `body` on each receiver in turn until one implements the message.
    /// Returns whether any did.
    @discardableResult
    static func notify<D>(_ receivers: DelegatePair<D>, _ body: (D) -> Void) -> Bool {
        guard let first = receivers.first else { return false }
        unanswered = false
        body(first)
        if !unanswered { return true }
        unanswered = false
        guard let second = receivers.second else { return false }
        body(second)
        defer { unanswered = false }
        return !unanswered
    }
}
