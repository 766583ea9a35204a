import Synchronization

/// A task's progress (`NSURLSessionTask.progress`) and the client's size hints.
extension SessionTask {
    /// `NSURLSessionTransferSizeUnknown`: a size hint that was not given.
    public static let transferSizeUnknown: Int64 = -1

    /// How far the task has come, in bytes sent and received (a value read now, not a live
    /// `Progress` object: the counters it is made of are the task's own).
    public var progress: TaskProgress {
        observed.withLock { state in
            let completed = state.lifecycle.state == .completed
            let total = state.countOfBytesExpectedToSend >= 0 && state.countOfBytesExpectedToReceive >= 0
                ? state.countOfBytesExpectedToSend + state.countOfBytesExpectedToReceive : -1
            let done = state.countOfBytesSent + state.countOfBytesReceived
            return TaskProgress(
                totalUnitCount: completed && state.error == nil ? max(total, done) : total,
                completedUnitCount: done,
                isFinished: completed
            )
        }
    }

    /// The client's best guess of how many bytes the task will send (headers and body), for
    /// scheduling; −1 (``transferSizeUnknown``, the default) when it has none. Not a limit.
    public var countOfBytesClientExpectsToSend: Int64 {
        get { observed.withLock { $0.countOfBytesClientExpectsToSend } }
        set { observed.withLock { $0.countOfBytesClientExpectsToSend = newValue } }
    }

    /// The client's best guess of how many bytes the task will receive; −1 when it has none.
    public var countOfBytesClientExpectsToReceive: Int64 {
        get { observed.withLock { $0.countOfBytesClientExpectsToReceive } }
        set { observed.withLock { $0.countOfBytesClientExpectsToReceive = newValue } }
    }
}

/// A task's progress at one moment, in bytes (`NSProgress`'s unit counts).
public struct TaskProgress: Hashable, Sendable {
    /// Bytes the task will send and receive in all; −1 while either side's length is unknown (a
    /// response without Content-Length), the bytes done once the task succeeded.
    public var totalUnitCount: Int64
    /// Bytes sent and received so far.
    public var completedUnitCount: Int64
    /// Whether the task has completed (successfully or not).
    public var isFinished: Bool

    /// Whether the total is unknown.
    public var isIndeterminate: Bool { totalUnitCount < 0 }

    /// `completedUnitCount / totalUnitCount`, 0 while the total is unknown (or 0 with nothing done).
    public var fractionCompleted: Double {
        if totalUnitCount > 0 { return min(1, Double(completedUnitCount) / Double(totalUnitCount)) }
        return isFinished && totalUnitCount == 0 ? 1 : 0
    }
}
