import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Synchronization
import TollgateCache
import TollgateHTTP
import TollgateLoop

/// Ending a task: caching the response, metrics, and the completion messages.
extension SessionTask {
    func finishSuccessfully() {
        guard response != nil, engine.request != nil else {
            fail(SessionError(.badServerResponse, engine.request?.url, "the response ended before its head"))
            return
        }
        if engine.download != nil {
            finishDownload()
            return
        }
        if engine.cache.writer != nil, engine.cache.pieceWriter == nil, let dataTask = self as? DataTask,
            let receiver = delegate as? any BodyEndReceiving
        {
            // The commit that follows can take a while (its fsyncs): the receiver may end its
            // side of the response now. (A completion handler's task has no delegate messages.)
            if engine.completionHandler == nil { receiver.dataTaskDidReceiveWholeBody(dataTask) }
        }
        finishStoring { [self] in complete(with: nil) }
    }

    func fail(_ error: SessionError) {
        abandonExchange()
        keepWhatArrived()
        // stale-if-error covers an origin that is unreachable or failing, never a refused trust
        // decision (an untrusted chain or a pin mismatch must not be papered over by a stale copy).
        if Self.staleIfErrorCodes.contains(error.code), servesStaleOnFailure() { return }
        if engine.download != nil, Self.resumableFailures.contains(error.code) {
            failDownloadWithResumeData(error)
            return
        }
        complete(with: error)
    }

    /// The failures after which a stored response may be served stale (RFC 5861 stale-if-error).
    static let staleIfErrorCodes: Set<SessionError.Code> = [
        .cannotConnectToHost, .cannotFindHost, .networkConnectionLost, .timedOut, .badServerResponse,
    ]

    /// The cancel action: stop everything, complete with `cancelled`.
    func cancelWork() {
        guard !isDone else { return }
        if let webSocket = self as? WebSocketTask, webSocket.cancelOpenConnection() { return }
        abandonExchange()
        keepWhatArrived()
        engine.machine.dropHeldPieces()
        complete(with: SessionError(.cancelled, engine.request?.url ?? originalRequest?.url, "the task was cancelled"))
    }

    /// Completes the task: metrics, then `didCompleteWithError`, then the completion handler.
    func complete(with error: SessionError?) {
        guard engine.machine.complete() else { return }
        // The exchange's forwarder holds the task: dropping it breaks the cycle (task → forwarder
        // → task) that otherwise kept every completed task, and all it refers to, alive.
        engine.exchange = nil
        engine.idleDeadline = nil
        engine.resourceDeadline = nil
        cancelWatchdog()
        engine.bodyStream?.close()
        discardDownloadFile()
        releaseCacheState()
        (self as? WebSocketTask)?.taskCompleting(with: error)
        let action = observed.withLock { state -> TaskLifecycle.Action in
            state.error = error
            if let outcome = engine.cache.outcome { state.cacheOutcome = outcome }
            return state.lifecycle.finished()
        }
        guard action == .complete else { return }
        let start = engine.startDate ?? TickClock.date
        // A response served from storage ended the task when its body was served: that instant
        // was read already.
        var end: Date?
        if error == nil, let last = engine.transactions.indices.last,
            engine.transactions[last].resourceFetchType == .localCache
        {
            end = engine.transactions[last].responseEndDate
        }
        let ended = end ?? Date()
        let metrics = TaskMetrics(
            transactionMetrics: engine.transactions,
            taskInterval: DateInterval(start: start, end: max(start, ended)),
            redirectCount: engine.machine.redirectCount
        )
        let receivers = taskDelegates
        DelegateDispatch.notify(receivers) { $0.task(self, didFinishCollecting: metrics) }
        // The seeds: a task made with a completion handler tells that handler, not the delegate,
        // that it completed (the delegate still gets challenges, redirects and metrics).
        let toldByHandler = engine.completionHandler != nil || engine.downloadCompletion != nil || engine.toldByCompletionHandler
        if let handler = engine.completionHandler {
            engine.completionHandler = nil
            handler(error == nil ? engine.wholeBody ?? ByteBuffer() : nil, response, error)
        }
        if let handler = engine.downloadCompletion {
            engine.downloadCompletion = nil
            handler(nil, response, error)
        }
        if !toldByHandler { DelegateDispatch.notify(receivers) { $0.task(self, didCompleteWithError: error) } }
        engine.wholeBody = nil
        session.taskDidComplete(self)
    }

    // MARK: suspend and resume

    /// Runs the machine's suspend: no timer and no read while suspended.
    func pause() {
        stopIdleTimer()
        stopResourceTimer()
        setReadDemand(false)
    }

    /// Runs the machine's resume: timers again, what was held released, reads again.
    func unpause() {
        startResourceTimer()
        if engine.machine.connection != nil { restartIdleTimer() }
        releaseHeld()
        pumpStoredFile()
        if !isDone, !engine.machine.awaitingDecision { setReadDemand(true) }
    }

    // MARK: timers

    // Both timeouts are deadlines watched by the loop's ``LoopDeadlines`` (the watchdog), told
    // at the earlier of them. Events move the request deadline later without touching the watch;
    // when told before a deadline (it moved meanwhile) the task registers again for the rest.
    // So a request schedules no NIO timer of its own: it joins and leaves the loop's list.

    /// The time the timeouts are judged by: the loop's tick, or the session's own ``TaskClock``.
    private var timeoutClockNow: NIODeadline {
        if let clock = session.taskClock { return clock.now }
        return TickClock.now
    }

    /// The request timeout: the longest time without a byte sent or received.
    func restartIdleTimer() {
        guard !engine.machine.isSuspended else {
            stopIdleTimer()
            return
        }
        let interval = requestTimeoutInterval
        engine.idleDeadline = timeoutClockNow + TimeAmount(interval)
        engine.idleInterval = interval
        engine.idleGeneration = engine.machine.exchange
        armWatchdog()
    }

    /// The request timeout of the current request (its own, else the session's).
    private var requestTimeoutInterval: Duration {
        if case .some(let request) = engine.request, let own = request.timeoutInterval { return own }
        return session.configuration.timeoutIntervalForRequest
    }

    /// Stops the request timeout (until the next ``restartIdleTimer()``).
    func stopIdleTimer() {
        engine.idleDeadline = nil
        if engine.resourceDeadline == nil { cancelWatchdog() }
    }

    /// The resource timeout runs (again) with what is left of its budget.
    func startResourceTimer(arm: Bool = true) {
        guard let budget = engine.resourceBudget, engine.resourceDeadline == nil else { return }
        let now = timeoutClockNow
        engine.runningSince = now
        engine.resourceDeadline = now + budget
        if arm { armWatchdog() }
    }

    /// The resource timeout pauses, keeping what is left of its budget.
    func stopResourceTimer() {
        engine.resourceDeadline = nil
        if let since = engine.runningSince, let budget = engine.resourceBudget {
            engine.resourceBudget = max(.zero, budget - (timeoutClockNow - since))
        }
        engine.runningSince = nil
        if engine.idleDeadline == nil { cancelWatchdog() }
    }

    /// Stops both timeouts' watch (the task completed or handed its work over).
    func cancelWatchdog() {
        guard deadlineSlot.isWatched else { return }
        loopDeadlines.unwatch(self)
    }

    /// Makes sure the watchdog fires no later than the earlier deadline.
    func armWatchdog() {
        let due: NIODeadline
        switch (engine.idleDeadline, engine.resourceDeadline) {
        case (nil, nil): return
        case (let idle?, nil): due = idle
        case (nil, let resource?): due = resource
        case (let idle?, let resource?): due = min(idle, resource)
        }
        loopDeadlines.watch(self, until: due)
    }

    /// The loop's deadline list (looked up once per task).
    private var loopDeadlines: LoopDeadlines {
        if let known = deadlines { return known }
        let found = LoopDeadlines.of(eventLoop)
        deadlines = found
        return found
    }

    /// The watchdog: a timeout ran out (fail), or the deadlines moved later (watch again).
    package func deadlinePassed() {
        let now = timeoutClockNow
        if let resource = engine.resourceDeadline, resource <= now {
            guard !isDone else { return }
            fail(SessionError(.timedOut, engine.request?.url, "the resource timeout ran out"))
            return
        }
        if let idle = engine.idleDeadline, idle <= now {
            engine.idleDeadline = nil
            if !isDone, !engine.machine.isSuspended, engine.machine.exchange == engine.idleGeneration || !engine.machine.holdsRetry {
                let interval = engine.idleInterval
                fail(SessionError(.timedOut, engine.request?.url, "no data for \(interval) (request timeout)"))
                return
            }
        }
        armWatchdog()
    }

    // MARK: delegate questions

    /// Asks each receiver in turn until one implements the question; `then` gets its answer (nil
    /// when none did) on the task's event loop. The answer may come later from any thread.
    func ask<Receiver, Answer: Sendable>(
        _ receivers: DelegatePair<Receiver>,
        _ question: @escaping (Receiver, @escaping @Sendable (Answer) -> Void) -> Void,
        isUnanswered: @escaping (Answer) -> Bool,
        then: @escaping (Answer?) -> Void
    ) {
        guard let first = receivers.first else {
            then(nil)
            return
        }
        let pending = PendingAnswer(task: self, rest: receivers.rest, question: question, isUnanswered: isUnanswered, then: then)
        // The completion handler captures the pending answer alone: a closure of one reference
        // needs no context of its own (asked for every response).
        question(first) { answer in pending.arrive(answer) }
    }
}

/// One question to a task's delegates waiting for its answer: taken once (a delegate may call
/// its completion handler twice), then handed on, or asked of the next receiver when the
/// answer says the question was not implemented. Touched only on the task's event loop (the
/// completion handler hops there first), so the once-flag needs no lock; the question's state
/// lives in this one object instead of a chain of closures.
private final class PendingAnswer<Receiver, Answer: Sendable>: @unchecked Sendable {
    private let task: SessionTask
    private let rest: DelegatePair<Receiver>
    private let question: (Receiver, @escaping @Sendable (Answer) -> Void) -> Void
    private let isUnanswered: (Answer) -> Bool
    private let then: (Answer?) -> Void
    private var answered = false

    init(
        task: SessionTask,
        rest: DelegatePair<Receiver>,
        question: @escaping (Receiver, @escaping @Sendable (Answer) -> Void) -> Void,
        isUnanswered: @escaping (Answer) -> Bool,
        then: @escaping (Answer?) -> Void
    ) {
        self.task = task
        self.rest = rest
        self.question = question
        self.isUnanswered = isUnanswered
        self.then = then
    }

    /// An answer from any thread: received on the task's loop.
    func arrive(_ answer: Answer) {
        let loop = task.eventLoop
        if loop.inEventLoop { receive(answer) } else { loop.execute { self.receive(answer) } }
    }

    func receive(_ answer: Answer) {
        guard !answered else { return }
        answered = true
        if isUnanswered(answer) {
            task.ask(rest, question, isUnanswered: isUnanswered, then: then)
        } else {
            then(answer)
        }
    }
}

extension TimeAmount {
    /// The same length of time as a Swift `Duration`.
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}

/// Carries a closure that is only ever called on the task's event loop across a @Sendable boundary.
struct UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

extension SessionTask: DeadlineWatcher {}
