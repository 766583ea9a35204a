import Foundation
import NIOConcurrencyHelpers
import NIOCore
import TollgateCache
import TollgateHTTP

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
        finishStoring { [self] in complete(with: nil) }
    }

    func fail(_ error: SessionError) {
        abandonExchange()
        // stale-if-error covers an origin that is unreachable or failing, never a refused trust
        // decision (an untrusted chain or a pin mismatch must not be papered over by a stale copy).
        if Self.staleIfErrorCodes.contains(error.code), servesStaleOnFailure() { return }
        complete(with: error)
    }

    /// The failures after which a stored response may be served stale (RFC 5861 stale-if-error).
    static let staleIfErrorCodes: Set<SessionError.Code> = [
        .cannotConnectToHost, .cannotFindHost, .networkConnectionLost, .timedOut, .badServerResponse,
    ]

    /// The cancel action: stop everything, complete with `cancelled`.
    func cancelWork() {
        guard !isDone else { return }
        abandonExchange()
        engine.held = []
        complete(with: SessionError(.cancelled, engine.request?.url ?? originalRequest?.url, "the task was cancelled"))
    }

    /// Completes the task: metrics, then `didCompleteWithError`, then the completion handler.
    func complete(with error: SessionError?) {
        guard !isDone else { return }
        engine.phase = .done
        engine.generation += 1
        // The exchange's forwarder holds the task: dropping it breaks the cycle (task → forwarder
        // → task) that otherwise kept every completed task, and all it refers to, alive.
        engine.exchange = nil
        stopIdleTimer()
        engine.resourceTimer?.cancel()
        engine.bodyStream?.close()
        discardDownloadFile()
        releaseCacheState()
        let action = observed.withLockedValue { state -> TaskLifecycle.Action in
            state.error = error
            if let outcome = engine.cacheOutcome { state.cacheOutcome = outcome }
            return state.lifecycle.finished()
        }
        guard action == .complete else { return }
        let start = engine.startDate ?? Date()
        let metrics = TaskMetrics(
            transactionMetrics: engine.transactions,
            taskInterval: DateInterval(start: start, end: max(start, Date())),
            redirectCount: engine.redirectCount
        )
        let receivers = taskDelegates
        DelegateDispatch.notify(receivers) { $0.task(self, didFinishCollecting: metrics) }
        if let handler = engine.completionHandler {
            engine.completionHandler = nil
            handler(error == nil ? engine.wholeBody ?? ByteBuffer() : nil, response, error)
        }
        DelegateDispatch.notify(receivers) { $0.task(self, didCompleteWithError: error) }
        engine.wholeBody = nil
        session.taskDidComplete(self)
    }

    // MARK: suspend and resume

    func pause() {
        engine.isSuspended = true
        stopIdleTimer()
        stopResourceTimer()
        setReadDemand(false)
    }

    func unpause() {
        engine.isSuspended = false
        guard !isDone else { return }
        startResourceTimer()
        if case .exchanging = engine.phase { restartIdleTimer() }
        releaseHeld()
        pumpStoredFile()
        if !isDone, !engine.awaitingResponseDecision { setReadDemand(true) }
    }

    // MARK: timers

    /// The request timeout: the longest time without a byte sent or received.
    ///
    /// Called on every event of an exchange, so it only moves a deadline: one timer per task
    /// is scheduled, and when it fires early (the deadline moved meanwhile) it is scheduled
    /// again for the rest of the time, instead of being cancelled and made anew per event.
    func restartIdleTimer() {
        guard !engine.isSuspended else {
            stopIdleTimer()
            return
        }
        let interval = engine.request?.timeoutInterval ?? session.configuration.timeoutIntervalForRequest
        let amount = TimeAmount(interval)
        engine.idleDeadline = .now() + amount
        engine.idleInterval = interval
        engine.idleGeneration = engine.generation
        if engine.idleTimer == nil { scheduleIdleTimer(in: amount) }
    }

    /// Stops the request timeout (until the next ``restartIdleTimer()``).
    func stopIdleTimer() {
        engine.idleTimer?.cancel()
        engine.idleTimer = nil
        engine.idleDeadline = nil
    }

    private func scheduleIdleTimer(in delay: TimeAmount) {
        engine.idleTimer = eventLoop.scheduleTask(in: delay) { [self] in
            engine.idleTimer = nil
            guard let deadline = engine.idleDeadline else { return }
            let now = NIODeadline.now()
            if deadline > now {
                scheduleIdleTimer(in: deadline - now)
                return
            }
            engine.idleDeadline = nil
            guard !isDone, !engine.isSuspended, engine.generation == engine.idleGeneration || engine.redirect == nil else { return }
            let interval = engine.idleInterval
            fail(SessionError(.timedOut, engine.request?.url, "no data for \(interval) (request timeout)"))
        }
    }

    func startResourceTimer() {
        guard let budget = engine.resourceBudget, engine.resourceTimer == nil else { return }
        engine.runningSince = .now()
        engine.resourceTimer = eventLoop.scheduleTask(in: budget) { [self] in
            guard !isDone else { return }
            fail(SessionError(.timedOut, engine.request?.url, "the resource timeout ran out"))
        }
    }

    func stopResourceTimer() {
        engine.resourceTimer?.cancel()
        engine.resourceTimer = nil
        if let since = engine.runningSince, let budget = engine.resourceBudget {
            engine.resourceBudget = max(.zero, budget - (.now() - since))
        }
        engine.runningSince = nil
    }

    // MARK: delegate questions

    /// Asks each receiver in turn until one implements the question; `then` gets its answer (nil
    /// when none did) on the task's event loop. The answer may come later from any thread.
    func ask<Receiver, Answer: Sendable>(
        _ receivers: [Receiver],
        _ question: @escaping (Receiver, @escaping @Sendable (Answer) -> Void) -> Void,
        isUnanswered: @escaping (Answer) -> Bool,
        then: @escaping (Answer?) -> Void
    ) {
        guard let first = receivers.first else {
            then(nil)
            return
        }
        let rest = Array(receivers.dropFirst())
        let loop = eventLoop
        let answered = AnswerOnce<Answer>()
        let deliver: (Answer) -> Void = { [self] answer in
            if isUnanswered(answer) {
                ask(rest, question, isUnanswered: isUnanswered, then: then)
            } else {
                then(answer)
            }
        }
        let box = UncheckedBox(deliver)
        question(first) { answer in
            guard answered.claim() else { return }
            if loop.inEventLoop { box.value(answer) } else { loop.execute { box.value(answer) } }
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

/// Lets a completion handler run only once, whatever the delegate does.
private final class AnswerOnce<Answer>: @unchecked Sendable {
    private var done = false
    private let lock = NSLock()
    func claim() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        if done { return false }
        done = true
        return true
    }
}

/// Carries a closure that is only ever called on the task's event loop across a @Sendable boundary.
struct UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
