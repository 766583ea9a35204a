import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Synchronization
import TollgateHTTP
import TollgateLoop

/// Receiving a response: redirects, the response decision, the body, the end.
extension SessionTask {
    /// An interim response (102, 103 Early Hints …): told to the delegates as it is. It is no part
    /// of the final response, so nothing of it reaches the cache or the final head.
    func interimResponseReceived(_ head: HTTPResponseHead) {
        restartIdleTimer()
        guard !engine.responseDelivered, !isDone else { return }
        DelegateDispatch.notify(taskDelegates) { $0.task(self, didReceiveInformationalResponse: head) }
    }

    func responseHeadReceived(_ head: HTTPResponseHead) {
        restartIdleTimer()
        let now = TickClock.date
        engine.responseDate = now
        engine.transaction.responseStartDate = now
        engine.transaction.response = head
        engine.transaction.countOfResponseHeaderBytesReceived = Int64(head.headerFields.wireSize + head.reason.utf8.count + 15)
        storeCookies(from: head)
        noteAuthenticationResult(head)
        if cacheHandlesNetworkHead(head) { return }
        if engine.cache.completingPieces != nil, completionTakesHead(head) { return }
        if head.isRedirect, let location = head.headerFields["Location"], let request = engine.request,
            let target = try? request.url.resolving(location)
        {
            beginRedirect(head: head, to: redirectRequest(from: request, to: target, status: head.status))
            return
        }
        if handleAuthenticationRequired(head) || handleProxyAuthenticationRequired(head) { return }
        beginStoringIfAllowed(head)
        // Not `deliverResponse(cut ? applyRangeCut(to: head) : head)`: the conditional copied the head.
        if engine.cache.rangeCut == nil {
            deliverResponse(head)
        } else {
            deliverResponse(applyRangeCut(to: head))
        }
    }

    func responseBodyReceived(_ buffer: ByteBuffer) {
        restartIdleTimer()
        engine.transaction.countOfResponseBodyBytesReceived += Int64(buffer.readableBytes)
        switch TaskCache.route(of: &engine.cache) {
        case .cacheAnswers:
            return  // the body of a 304 or of a 5xx the cache answers for is not the task's
        case .pieces:
            storeBodyPiece(buffer)  // the missing bytes: to the pieces, not to the task
            return
        case .task:
            break
        }
        // A held redirect, 401 or 407 keeps its body while it may still be delivered.
        if engine.machine.retryBodyReceived(buffer) { return }
        acceptBody(buffer)
    }

    /// Counts a piece of the task's response body and delivers it, or holds it while the task is
    /// suspended or waiting for the delegate.
    func acceptBody(_ buffer: ByteBuffer) {
        observed.withLock { $0.countOfBytesReceived += Int64(buffer.readableBytes) }
        if let piece = engine.machine.bodyReceived(buffer) { deliverBody(piece) }
    }

    func responseEnded(reusable: Bool) {
        engine.transaction.responseEndDate = TickClock.date
        // The status alone, read under the lock (`response?.status` copied the whole head out).
        if observed.withLock({ $0.response?.status }) == 101 {
            // The connection stays with the task until its delegate decides (become a stream or not).
            engine.upgradeEnded = true
            if engine.becomeStreamPending {
                if let webSocket = self as? WebSocketTask { webSocket.takeUpgradedConnection() } else { becomeStream() }
            } else if engine.machine.endReceived() {
                // (Held otherwise: the connection stays the task's, released with the end.)
                finishSuccessfully()
            }
            return
        }
        let route = TaskCache.route(of: &engine.cache)
        if engine.machine.awaitingDecision, route != .cacheAnswers {
            // The delegate may still answer becomeStream: the connection stays the task's until
            // it answers (releaseHeld lets it go).
            engine.machine.endReceivedKeepingConnection(reusable: reusable)
            return
        }
        if let connection = engine.machine.exchangeEnded() {
            session.pool.release(connection, reusable: reusable)
        }
        switch route {
        case .cacheAnswers:
            finishCacheAnsweredExchange()
            return
        case .pieces:
            finishCompletingPieces()
            return
        case .task:
            break
        }
        switch engine.machine.retryEnded() {
        case .follow(let next):
            followRedirect(to: next)
        case .wait:
            return  // the held response's answer is still to come
        case .drop:
            if engine.machine.endReceived() { finishSuccessfully() }
        }
    }

    func exchangeFailed(_ error: SessionError, responseStarted: Bool) {
        var error = error
        error.failingURL = engine.request?.url
        guard let connection = engine.machine.exchangeFailed() else { return }
        if error.notProcessed {
            session.pool.releaseRefused(connection)  // a new stream goes elsewhere
        } else {
            session.pool.release(connection, reusable: false)
        }
        // Lost before any response: a request the server did not process (RFC 9113 §8.7), or one
        // on a kept-alive connection the server closed as it came, may go again (the machine's rule).
        if !responseStarted, error.code == .networkConnectionLost, let request = engine.request {
            let anotherTarget = connectionTargetLost(connection, error: error)
            let lost: TaskMachine<OriginConnection, Scheduled<Void>>.LostExchange =
                error.notProcessed
                ? .notProcessed
                : .connectionLost(
                    reusedConnection: connection.exchangeCount > 1, idempotent: request.method.isIdempotent,
                    anotherTarget: anotherTarget
                )
            if engine.machine.exchangeLost(lost) == .resend {
                engine.transactions.removeLast()
                sendToNetwork(request, resendingAfter: error)
                return
            }
        }
        if let failure = engine.machine.failureReceived(error) { fail(failure) }
    }

    /// A new connection to a `connect-to` target was lost before its response: the target is put
    /// last (as one that could not be connected to), and the answer is whether the host has
    /// other targets that a resend may reach.
    private func connectionTargetLost(_ connection: OriginConnection, error: SessionError) -> Bool {
        guard connection.exchangeCount <= 1, let target = connection.establishment.target else { return false }
        let key = connection.key
        let targets = session.configuration.connectionTargets?(key.host, key.port) ?? []
        guard targets.count > 1 else { return false }
        ConnectionTargetWalk.noteFailed(
            target, of: "\(key.host):\(key.port)", why: "the connection was lost before the response: \(error.detail)",
            in: session.pool.targetHealth
        )
        return true
    }

    // MARK: redirects

    /// The request a redirect leads to (RFC 9110 §15.4): 303, and 301/302 after POST, become GET
    /// without a body; 307 and 308 keep method and body. Credentials and cookies set for the old
    /// origin are not carried to another.
    private func redirectRequest(from request: Request, to target: HTTPURL, status: Int) -> Request {
        var next = request
        next.url = target
        let becomesGet = (status == 303 && request.method != .head) || ((status == 301 || status == 302) && request.method == .post)
        if becomesGet {
            next.method = .get
            next.body = nil
            for name in ["Content-Length", "Content-Type", "Content-Encoding", "Transfer-Encoding"] {
                next.headerFields.remove(name)
            }
        }
        if !target.isSameOrigin(as: request.url) {
            next.headerFields.remove(.authorization)
            next.headerFields.remove(.cookie)
        }
        next.headerFields.remove(.host)
        return next
    }

    private func beginRedirect(head: TollgateHTTP.HTTPResponseHead, to newRequest: Request) {
        guard engine.machine.mayRedirect(maximum: session.configuration.maximumRedirects) else {
            abandonExchange()
            fail(SessionError(.httpTooManyRedirects, engine.request?.url, "more than \(session.configuration.maximumRedirects) redirects"))
            return
        }
        let hold = engine.machine.holdForRetry(.redirect, head: head, newRequest: newRequest)
        // The redirect's body is held (small) or dropped; read no more of it until the delegate answers.
        setReadDemand(false)
        // The configuration's filter first (it holds in background sessions too); a background
        // session then follows without asking the delegate, as the seeds say.
        let filtered = engine.request.map { from in session.configuration.redirectFilter?(from.url, newRequest.url) == false } ?? false
        let receivers = filtered || session.isBackground ? DelegatePair<any TaskDelegate>(nil, nil) : taskDelegates
        ask(
            receivers,
            { delegate, answer in
                delegate.task(self, willPerformHTTPRedirection: head, newRequest: newRequest, completionHandler: answer)
            },
            isUnanswered: { if case .unanswered = $0.base { true } else { false } }
        ) { [self] answer in
            let decision = filtered ? RedirectDecision.deliverRedirectResponse : answer
            // An answer for a hold that is gone (the task completed) is late: the machine drops it.
            guard engine.machine.pendingRetry(hold) != nil else { return }
            setReadDemand(true)
            switch decision?.base {
            case .deliverRedirectResponse:
                if let pending = engine.machine.deliverRetry(hold) { deliverPendingAsResponse(pending) }
            case .follow(let request):
                runRetryStep(engine.machine.followRetry(hold, with: request))
            case .unanswered, .none:
                runRetryStep(engine.machine.followRetry(hold, with: newRequest))
            }
        }
    }

    /// Runs what a retry event decided: send the next request, or nothing yet.
    func runRetryStep(_ step: TaskMachine<OriginConnection, Scheduled<Void>>.RetryStep) {
        if case .follow(let request) = step { followRedirect(to: request) }
    }

    /// Sends the request a held redirect, 401 or 407 leads to (the machine counted a redirect).
    func followRedirect(to request: Request) {
        beginLoading(request)
    }

    /// A held redirect or 401 becomes the task's response after all (not followed, not answered);
    /// the machine already ended the hold.
    func deliverPendingAsResponse(_ pending: PendingRetry) {
        // Stored like any response when the rules allow (a 301 or 308 is heuristically cacheable):
        // a client that follows redirects itself is then served every hop from the cache, offline too.
        beginStoringIfAllowed(pending.head)
        deliverResponse(pending.head)
        for piece in pending.body { acceptBody(piece) }
        if pending.ended, engine.machine.endReceived() { finishSuccessfully() }
    }

    // MARK: delivery

    /// Hands the response head to the delegate and waits for its disposition before delivering body.
    func deliverResponse(_ head: TollgateHTTP.HTTPResponseHead) {
        let outcome = engine.cache.outcome
        let expected = head.contentLength ?? -1
        observed.withLock {
            $0.response = head
            $0.countOfBytesExpectedToReceive = expected
            if let outcome { $0.cacheOutcome = outcome }
        }
        engine.responseDelivered = true
        if engine.completionHandler != nil {
            engine.wholeBody = ByteBuffer()
        }
        if self is DownloadTask {
            startDownloadFile()
            return
        }
        if let webSocket = self as? WebSocketTask {
            webSocket.handshakeAnswered(head)
            return
        }
        // A background session's upload tasks are not asked about their response (seed 001).
        guard engine.completionHandler == nil, !session.isBackground, let dataTask = self as? DataTask else { return }
        beginMultipartIfReplacing(head)
        if let decider = immediateResponseDecider {
            // Decided during the call: nothing arrived meanwhile, so an allowed response's
            // reads go on; any other answer continues with reads paused, as after a question.
            let disposition = decider.dataTask(dataTask, decideOn: head).base
            guard !isDone else { return }
            switch disposition {
            case .allow, .unanswered: break
            case .cancel, .becomeDownload, .becomeStream: setReadDemand(false)
            }
            apply(disposition, readsPaused: false)
            return
        }
        askAboutResponse(head, of: dataTask) { [self] disposition in apply(disposition, readsPaused: true) }
    }

    /// Asks the data delegates about `head` (a response, or a part of a multipart one) with reads
    /// paused; `decided` gets the answer unless the task completed meanwhile.
    func askAboutResponse(
        _ head: TollgateHTTP.HTTPResponseHead,
        of dataTask: DataTask,
        decided: @escaping (ResponseDisposition.Base) -> Void
    ) {
        engine.machine.askedForDecision()
        setReadDemand(false)
        ask(
            dataDelegates,
            { delegate, answer in delegate.dataTask(dataTask, didReceive: head, completionHandler: answer) },
            isUnanswered: { if case .unanswered = $0.base { true } else { false } }
        ) { [self] disposition in
            guard engine.machine.decisionArrived() else { return }
            decided(disposition?.base ?? .unanswered)
        }
    }

    /// Carries out the delegate's disposition of the response; `readsPaused`: the reads were
    /// paused while it decided.
    private func apply(_ disposition: ResponseDisposition.Base, readsPaused: Bool) {
        switch disposition {
        case .cancel:
            cancel()
        case .becomeDownload:
            becomeDownload()
        case .becomeStream:
            becomeStream()
        case .allow, .unanswered:
            releaseHeld()
            pumpStoredFile()
            if readsPaused, !engine.machine.isSuspended { setReadDemand(true) }
        }
    }

    /// Delivers pieces held back while suspended or while waiting for a decision, then the end.
    func releaseHeld() {
        while true {
            switch engine.machine.nextHeld() {
            case .deliver(let piece):
                deliverBody(piece)
            case .fail(let failure):
                fail(failure)
                return
            case .finish(let connection, let reusable):
                // A connection kept while the delegate decided (see responseEnded).
                if let connection { session.pool.release(connection, reusable: reusable) }
                finishSuccessfully()
                return
            case .none:
                return
            }
        }
    }

    func deliverBody(_ buffer: ByteBuffer) {
        storeBodyPiece(buffer)
        var buffer = buffer
        if engine.cache.rangeCut != nil {
            // A Range fetched whole: the cache took every byte, the task gets its range.
            guard let part = engine.cache.rangeCut!.cut(buffer) else { return }
            buffer = part
        }
        if engine.download != nil {
            writeToDownloadFile(buffer)
            return
        }
        if engine.wholeBody != nil {
            engine.wholeBody!.writeImmutableBuffer(buffer)
        }
        guard engine.completionHandler == nil, let dataTask = self as? DataTask else { return }
        if engine.multipart != nil {
            deliverMultipart(buffer)
            return
        }
        let receivers = dataDelegates
        DelegateDispatch.notify(receivers) { $0.dataTask(dataTask, didReceive: buffer) }
    }

    func setReadDemand(_ demand: Bool) {
        guard let connection = engine.machine.connection else { return }
        // Twice per response (held while the delegate decides): no closure when on the loop.
        if connection.eventLoop.inEventLoop {
            connection.handler.setReadDemand(demand)
        } else {
            connection.onLoop { connection.handler.setReadDemand(demand) }
        }
    }

    /// Closes the running exchange's connection (it cannot be reused mid-response).
    func abandonExchange() {
        (self as? StreamTask)?.closeStream()
        (self as? WebSocketTask)?.closeChannel()
        switch engine.machine.abandon() {
        case .closeConnection(let connection):
            connection.onLoop { connection.handler.close() }
            session.pool.release(connection, reusable: false)
        case .cancelLease(let id):
            session.pool.cancelLease(id)
        case .cancelTimer(let scheduled):
            scheduled.cancel()
        case .nothing:
            break
        }
    }

    private func storeCookies(from head: TollgateHTTP.HTTPResponseHead) {
        let configuration = session.configuration
        guard let storage = configuration.cookieStorage, configuration.httpCookieAcceptPolicy != .never,
            let url = engine.request?.url
        else { return }
        let values = head.headerFields.values(for: "Set-Cookie")
        if !values.isEmpty { storage.store(setCookieValues: values, from: url, policy: configuration.httpCookieAcceptPolicy) }
    }
}
