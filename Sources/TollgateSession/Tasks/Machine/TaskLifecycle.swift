/// The states of a task and the moves between them, as the seeds define them:
/// suspended (new tasks start here) → running → canceling → completed.
///
/// A pure state machine: each event returns the action the task must run; no I/O here.
struct TaskLifecycle: Sendable {
    enum State: Equatable, Sendable {
        case suspended(started: Bool)
        case running
        case canceling
        case completed
    }

    enum Action: Equatable, Sendable {
        /// First resume: begin loading.
        case start
        /// Resume after a suspend: read and deliver again, restart the timers.
        case unpause
        /// Suspend: stop reading, stop the timers.
        case pause
        /// Cancel: stop all work and complete with `cancelled`.
        case cancel
        /// Deliver the completion to the delegate.
        case complete
        /// Nothing to do.
        case none
    }

    var state: State = .suspended(started: false)

    mutating func resume() -> Action {
        switch state {
        case .suspended(started: false):
            state = .running
            return .start
        case .suspended(started: true):
            state = .running
            return .unpause
        case .running, .canceling, .completed:
            return .none
        }
    }

    mutating func suspend() -> Action {
        switch state {
        case .running:
            state = .suspended(started: true)
            return .pause
        case .suspended, .canceling, .completed:
            return .none
        }
    }

    mutating func cancel() -> Action {
        switch state {
        case .running, .suspended:
            state = .canceling
            return .cancel
        case .canceling, .completed:
            return .none
        }
    }

    /// The work ended (successfully, with an error, or after cancel).
    mutating func finished() -> Action {
        switch state {
        case .completed:
            return .none
        case .running, .canceling, .suspended:
            state = .completed
            return .complete
        }
    }
}
