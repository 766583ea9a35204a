public import Foundation
import NIOConcurrencyHelpers
public import NIOCore
import Synchronization
import TollgateLoop
public import TollgateHTTP

/// One request carried out by a ``Session``, in the model of `URLSessionTask`.
///
/// Tasks start suspended; ``resume()`` starts them. A suspended task reads nothing from the
/// network and no timeout runs for it; ``cancel()`` ends it with a `cancelled` error.
/// The public methods and properties may be used from any thread; the delegate is called on
/// the task's ``eventLoop``.
public class SessionTask: @unchecked Sendable, Hashable, CustomStringConvertible {
    /// The state of a task, as `URLSessionTask.State`.
    public enum State: Int, Sendable {
        /// Running.
        case running = 0
        /// Suspended (new tasks start here).
        case suspended = 1
        /// `cancel()` was called; the task has not yet told its delegate it completed.
        case canceling = 2
        /// Completed (successfully or not).
        case completed = 3
    }

    /// Default priority (0.5), as `URLSessionTask.defaultPriority`.
    public static let defaultPriority: Float = 0.5
    /// Low priority (0.25).
    public static let lowPriority: Float = 0.25
    /// High priority (0.75).
    public static let highPriority: Float = 0.75

    /// How many credentials a task tries for one protection space before it gives the 401 back.
    static let maximumAuthenticationAttempts = 5

    /// Unique among the tasks of its session.
    public let taskIdentifier: Int
    /// The request the task was created with.
    public let originalRequest: Request?
    /// The session that created the task.
    public let session: Session
    /// The event loop the task works and calls its delegate on.
    public let eventLoop: any EventLoop

    struct Observed {
        var lifecycle = TaskLifecycle()
        var currentRequest: Request?
        var response: HTTPResponseHead?
        var error: SessionError?
        var taskDescription: String?
        var priority: Float = SessionTask.defaultPriority
        var earliestBeginDate: Date?
        var delegate: (any TaskDelegate)?
        var countOfBytesSent: Int64 = 0
        var countOfBytesExpectedToSend: Int64 = 0
        var countOfBytesReceived: Int64 = 0
        var countOfBytesExpectedToReceive: Int64 = -1
        var countOfBytesClientExpectsToSend: Int64 = SessionTask.transferSizeUnknown
        var countOfBytesClientExpectsToReceive: Int64 = SessionTask.transferSizeUnknown
        var cacheOutcome: CacheOutcome?
    }

    /// Stored in the task itself (a `Mutex`, not a lock box of its own): one allocation fewer
    /// per task, and an uncontended lock is an atomic exchange rather than a pthread call.
    let observed: Mutex<Observed>
    /// The task's own delegate as last set (``delegate``): the loop's copy, read by messages.
    /// Touched only on ``eventLoop``, like the engine, but kept apart from it: the engine is
    /// replaced when a task hands its work over.
    private var loopDelegate: (any TaskDelegate)? {
        didSet { loopDataDelegates = nil }
    }
    /// ``delegates(as:)`` for data task delegates, once cast, and the first of them as an
    /// ``ImmediateResponseDeciding`` (nil when it is not one): a data task asks for them with
    /// every response and body piece, and an `as?` to a protocol is a runtime conformance lookup.
    /// Cleared when the loop's delegate changes (the session delegate is read once per task).
    private var loopDataDelegates: (pair: DelegatePair<any DataTaskDelegate>, decider: (any ImmediateResponseDeciding)?)?
    /// The session delegate as a task delegate, once read (the outer nil: not read yet).
    private var loopSessionDelegate: (any TaskDelegate)??
    /// Everything below is touched only on ``eventLoop``.
    var engine: TaskEngine
    /// The task's place in its loop's deadline list (the watchdog of both timeouts).
    package var deadlineSlot = DeadlineSlot()
    /// The loop's deadline list, once looked up.
    var deadlines: LoopDeadlines?

    init(session: Session, identifier: Int, request: Request?, eventLoop: any EventLoop, delegate: (any TaskDelegate)?) {
        self.session = session
        self.taskIdentifier = identifier
        self.originalRequest = request
        self.eventLoop = eventLoop
        var observed = Observed()
        observed.currentRequest = request
        observed.delegate = delegate
        self.observed = Mutex(observed)
        self.engine = TaskEngine()
        self.loopDelegate = delegate
    }

    // MARK: public properties

    /// The task's state.
    public var state: State {
        switch observed.withLock({ $0.lifecycle.state }) {
        case .suspended: .suspended
        case .running: .running
        case .canceling: .canceling
        case .completed: .completed
        }
    }

    /// The request being loaded now (changes when a redirect is followed).
    public var currentRequest: Request? { observed.withLock { $0.currentRequest } }
    /// The response head, once it arrived.
    public var response: HTTPResponseHead? { observed.withLock { $0.response } }
    /// The error the task completed with, or nil.
    public var error: SessionError? { observed.withLock { $0.error } }
    /// What the cache did for this task (for the `Cache-Status` field); nil without a cache.
    public var cacheOutcome: CacheOutcome? { observed.withLock { $0.cacheOutcome } }
    /// Body bytes sent.
    public var countOfBytesSent: Int64 { observed.withLock { $0.countOfBytesSent } }
    /// Body bytes the task expects to send (0 without a body, −1 when unknown).
    public var countOfBytesExpectedToSend: Int64 { observed.withLock { $0.countOfBytesExpectedToSend } }
    /// Body bytes received.
    public var countOfBytesReceived: Int64 { observed.withLock { $0.countOfBytesReceived } }
    /// Body bytes the response announced (Content-Length), −1 when unknown.
    public var countOfBytesExpectedToReceive: Int64 { observed.withLock { $0.countOfBytesExpectedToReceive } }

    /// A description of the task for the application's own use.
    public var taskDescription: String? {
        get { observed.withLock { $0.taskDescription } }
        set {
            observed.withLock { $0.taskDescription = newValue }
            recordDescriptionAndBeginDate()
        }
    }

    /// 0 (lowest) … 1 (highest); orders this task among those waiting for a connection to the same host.
    public var priority: Float {
        get { observed.withLock { $0.priority } }
        set { observed.withLock { $0.priority = min(1, max(0, newValue)) } }
    }

    /// The task does not start loading before this date (set before `resume()`).
    public var earliestBeginDate: Date? {
        get { observed.withLock { $0.earliestBeginDate } }
        set {
            observed.withLock { $0.earliestBeginDate = newValue }
            recordDescriptionAndBeginDate()
        }
    }

    /// The task's own delegate; it receives the task's messages before the session delegate.
    public var delegate: (any TaskDelegate)? {
        get { observed.withLock { $0.delegate } }
        set {
            observed.withLock { $0.delegate = newValue }
            // Messages read the loop's copy (no lock per message); from another thread it is
            // brought up to date on the loop, to whatever was set last.
            if eventLoop.inEventLoop {
                loopDelegate = newValue
            } else {
                eventLoop.execute { self.loopDelegate = self.observed.withLock { $0.delegate } }
            }
        }
    }

    // MARK: control

    /// Starts or continues the task.
    public func resume() {
        let action = observed.withLock { $0.lifecycle.resume() }
        recordRunState(action)
        runOnLoop(action)
    }

    /// Pauses the task: nothing more is read from the network, and its timeouts stop.
    public func suspend() {
        let action = observed.withLock { $0.lifecycle.suspend() }
        recordRunState(action)
        runOnLoop(action)
    }

    /// Cancels the task; it completes with a `cancelled` error (at once, even when suspended).
    public func cancel() {
        let action = observed.withLock { $0.lifecycle.cancel() }
        runOnLoop(action)
    }

    /// Runs a lifecycle action on the event loop. Actions are decided under the lock by the
    /// calling thread but run later, so calls from two threads can arrive out of order: start
    /// does nothing once the task ended, and suspension follows the state as it is *now*.
    func run(_ action: TaskLifecycle.Action) {
        switch action {
        case .start:
            if !isDone { start() }
        case .unpause, .pause:
            syncSuspension()
        case .cancel:
            cancelWork()
        case .complete, .none:
            break
        }
    }

    /// Pauses or unpauses the work so that it matches the lifecycle state.
    func syncSuspension() {
        // A completed task's machine turns both down.
        switch observed.withLock({ $0.lifecycle.state }) {
        case .suspended(started: true): if engine.machine.suspend() { pause() }
        case .running: if engine.machine.resume() { unpause() }
        default: break
        }
    }

    /// Runs a lifecycle action on the task's event loop: at once when already there, without
    /// making a closure for it (a task is resumed once per request, usually on its own loop).
    private func runOnLoop(_ action: TaskLifecycle.Action) {
        if eventLoop.inEventLoop {
            run(action)
        } else {
            eventLoop.execute { self.run(action) }
        }
    }

    /// Runs `body` on the task's event loop (at once when already there).
    func onLoop(_ body: @escaping @Sendable () -> Void) {
        if eventLoop.inEventLoop { body() } else { eventLoop.execute(body) }
    }

    public static func == (lhs: SessionTask, rhs: SessionTask) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

    public var description: String {
        "\(type(of: self))(\(taskIdentifier), \(state), \(currentRequest?.url.absoluteString ?? "-"))"
    }

    /// The receivers of this task's messages: its own delegate, then the session delegate.
    /// On the task's loop, where data tasks send every message, without taking a lock; a stream
    /// task also reports from its channel's loop, and reads them under the locks there.
    var taskDelegates: DelegatePair<any TaskDelegate> {
        guard eventLoop.inEventLoop else { return currentTaskDelegates }
        // The session delegate is read once per task (not in init: tasks are made under the
        // session's lock): a session keeps its delegate until every task has completed.
        if case .none = loopSessionDelegate { loopSessionDelegate = .some(session.taskDelegate) }
        return .task(own: loopDelegate, session: loopSessionDelegate ?? nil)
    }

    /// ``taskDelegates`` read under the locks, as they are set this instant (from any thread).
    var currentTaskDelegates: DelegatePair<any TaskDelegate> {
        .task(own: delegate, session: session.taskDelegate)
    }

    /// The receivers of this task's messages that take messages of type `Receiver` (a data,
    /// download or stream task delegate), in order.
    func delegates<Receiver>(as type: Receiver.Type) -> DelegatePair<Receiver> {
        let all = taskDelegates
        return DelegatePair(all.first.flatMap { $0 as? Receiver }, all.second.flatMap { $0 as? Receiver })
    }

    /// ``delegates(as:)`` for data task delegates, cast once on the loop (``loopDataDelegates``).
    var dataDelegates: DelegatePair<any DataTaskDelegate> {
        guard eventLoop.inEventLoop else { return delegates(as: (any DataTaskDelegate).self) }
        castDataDelegatesIfNeeded()
        // The part asked for, read in place: a copy of the whole remembered tuple retained
        // every delegate in it for each message.
        return loopDataDelegates.unsafelyUnwrapped.pair
    }

    /// The first data task delegate when it decides on responses at once (on the loop only).
    var immediateResponseDecider: (any ImmediateResponseDeciding)? {
        guard eventLoop.inEventLoop else { return nil }
        castDataDelegatesIfNeeded()
        return loopDataDelegates.unsafelyUnwrapped.decider
    }

    private func castDataDelegatesIfNeeded() {
        guard loopDataDelegates == nil else { return }
        let all = taskDelegates
        // The witness answers for the class that declared the conformance; a subclass that adds
        // DataTaskDelegate to a TaskDelegate base is found by the cast. (The decider is only a
        // shortcut: missing one costs a completion handler, not a message.)
        func data(_ delegate: (any TaskDelegate)?) -> (any DataTaskDelegate)? {
            guard let delegate else { return nil }
            return delegate.asDataTaskDelegate ?? delegate as? any DataTaskDelegate
        }
        let pair = DelegatePair(data(all.first), data(all.second))
        loopDataDelegates = (pair: pair, decider: pair.first?.asImmediateResponseDecider)
    }
}

/// A task that loads a response into memory or streams it to its delegate (`URLSessionDataTask`).
public class DataTask: SessionTask, @unchecked Sendable {}

/// A data task that sends a body from memory, a file or a stream (`URLSessionUploadTask`).
public final class UploadTask: DataTask, @unchecked Sendable {}
