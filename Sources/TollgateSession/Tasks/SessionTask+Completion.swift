import Foundation
import NIOConcurrencyHelpers
import NIOCore
import TollgateCache
import TollgateHTTP

/// Ending a task: caching the response, metrics, and the completion messages.
extension SessionTask {
    func finishSuccessfully() {
        guard let head = response, let request = engine.request else {
            fail(SessionError(.badServerResponse, engine.request?.url, "the response ended before its head"))
            return
        }
        if engine.download != nil {
            finishDownload()
            return
        }
        if engine.keepsBodyForCache, let cache = session.configuration.responseCache, let body = engine.wholeBody,
            let dataTask = self as? DataTask
        {
            // The request timeout does not run while the delegate decides about a complete response.
            engine.idleTimer?.cancel()
            let proposed = CachedResponse(
                request: request.head, response: head, body: body,
                requestTime: engine.requestTime, responseTime: engine.responseTime
            )
            let receivers = taskDelegates.compactMap { $0 as? any DataTaskDelegate }
            ask(
                receivers,
                { delegate, answer in delegate.dataTask(dataTask, willCacheResponse: proposed, completionHandler: answer) },
                isNotImplemented: { if case .notImplemented = $0.base { true } else { false } }
            ) { [self] decision in
                guard !isDone else { return }
                switch decision?.base {
                case .store(let chosen): cache.store(chosen)
                case .notImplemented, .none: cache.store(proposed)
                case .doNotStore: break
                }
                complete(with: nil)
            }
            return
        }
        complete(with: nil)
    }

    /// Whether the whole body must be kept for the cache: the session has one and it may store this.
    func wantsBodyForCache(_ head: HTTPResponseHead) -> Bool {
        guard let cache = session.configuration.responseCache, let request = engine.request,
            engine.transactions.last?.resourceFetchType == .networkLoad
        else { return false }
        let policy = request.cachePolicy ?? session.configuration.requestCachePolicy
        guard policy.mayLoadFromNetwork else { return false }
        return cache.mayStore(head, for: request.head, bodyLength: head.contentLength.map { Int($0) })
    }

    /// Answers the task from a stored response (no connection is opened).
    func deliverFromCache(_ cached: CachedResponse, request: Request) {
        var metrics = TransactionMetrics(request: request)
        metrics.fetchStartDate = Date()
        metrics.resourceFetchType = .localCache
        metrics.response = cached.response
        metrics.responseStartDate = Date()
        metrics.countOfResponseBodyBytesReceived = Int64(cached.body.readableBytes)
        engine.transactions.append(metrics)
        deliverResponse(cached.response)
        observed.withLockedValue { $0.countOfBytesReceived += Int64(cached.body.readableBytes) }
        if cached.body.readableBytes > 0 { engine.held.append(cached.body) }
        engine.endHeld = true
        engine.transaction.responseEndDate = Date()
        releaseHeld()
    }

    func fail(_ error: SessionError) {
        abandonExchange()
        complete(with: error)
    }

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
        engine.idleTimer?.cancel()
        engine.resourceTimer?.cancel()
        engine.bodyStream?.close()
        discardDownloadFile()
        let action = observed.withLockedValue { state -> TaskLifecycle.Action in
            state.error = error
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
        engine.idleTimer?.cancel()
        engine.idleTimer = nil
        stopResourceTimer()
        setReadDemand(false)
    }

    func unpause() {
        engine.isSuspended = false
        guard !isDone else { return }
        startResourceTimer()
        if case .exchanging = engine.phase { restartIdleTimer() }
        releaseHeld()
        if !isDone, !engine.awaitingResponseDecision { setReadDemand(true) }
    }

    // MARK: timers

    /// The request timeout: the longest time without a byte sent or received.
    func restartIdleTimer() {
        engine.idleTimer?.cancel()
        guard !engine.isSuspended else { return }
        let interval = engine.request?.timeoutInterval ?? session.configuration.timeoutIntervalForRequest
        let generation = engine.generation
        engine.idleTimer = eventLoop.scheduleTask(in: TimeAmount(interval)) { [self] in
            guard !isDone, !engine.isSuspended, engine.generation == generation || engine.redirect == nil else { return }
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
        isNotImplemented: @escaping (Answer) -> Bool,
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
            if isNotImplemented(answer) {
                ask(rest, question, isNotImplemented: isNotImplemented, then: then)
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
