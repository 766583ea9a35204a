import NIOCore

/// The actions ``TaskMachine``'s events return for the runner (the `SessionTask` extensions).
extension TaskMachine {
    /// What to stop when the task's work is abandoned (a failure, a cancel, a redirect limit).
    enum Abandon {
        case closeConnection(Connection)
        case cancelLease(Int)
        case cancelTimer(Timer)
        case nothing
    }

    /// The next held thing to deliver, when the gate is open.
    enum HeldStep {
        case deliver(ByteBuffer)
        case fail(SessionError)
        /// Finish the task; first release `connection` (kept while the delegate decided).
        case finish(releasing: Connection?, reusable: Bool)
        /// Nothing to release now (the gate is closed, or nothing is held).
        case none
    }

    /// What the runner does after a retry event.
    enum RetryStep {
        /// Send `request` now: the hold is over (a redirect is counted).
        case follow(Request)
        /// Nothing yet: the answer or the response's end is still to come.
        case wait
        /// The event is late (no such hold: it was answered, or the task completed): drop it.
        case drop
    }
}

extension TaskMachine.HeldStep: Equatable where Connection: Equatable {}
extension TaskMachine.Abandon: Equatable where Connection: Equatable, Timer: Equatable {}
