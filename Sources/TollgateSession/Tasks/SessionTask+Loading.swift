import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Synchronization
import TollgateCache
import TollgateHTTP
import TollgateLoop
import TollgateTLS

/// Starting a task: the delay, the cache, the body, the connection, the request.
extension SessionTask {
    func start() {
        if let stream = self as? StreamTask {
            stream.startStream()
            return
        }
        let now = TickClock.date
        engine.startDate = now
        engine.resourceBudget = TimeAmount(session.configuration.timeoutIntervalForResource)
        // The resource timeout starts once loading has begun, and only for a task still running
        // then: a task answered at once (a cache hit) reads no clock for it. The watchdog is armed
        // then too: usually the request timeout (far sooner) armed it meanwhile, and a second
        // scheduling is saved.
        defer {
            if !isDone, !engine.machine.isSuspended {
                startResourceTimer(arm: false)
                armWatchdog()
            }
        }
        guard let request = originalRequest else {
            fail(SessionError(.badURL, nil, "the task has no request"))
            return
        }
        if let begin = earliestBeginDate, begin.timeIntervalSinceNow > 0 {
            let delay = TimeAmount.nanoseconds(Int64(begin.timeIntervalSinceNow * 1_000_000_000))
            let scheduled = eventLoop.scheduleTask(in: delay) { [self] in
                guard engine.machine.beginDateReached() else { return }
                askDelayedRequestDisposition(request)
            }
            engine.machine.waitForBeginDate(scheduled)
            return
        }
        beginLoading(request, now: now)
    }

    private func askDelayedRequestDisposition(_ request: Request) {
        let exchange = engine.machine.exchange
        ask(
            taskDelegates,
            { delegate, answer in delegate.task(self, willBeginDelayedRequest: request, completionHandler: answer) },
            isUnanswered: { if case .unanswered = $0.base { true } else { false } }
        ) { [self] disposition in
            guard engine.machine.accepts(exchange: exchange) else { return }
            switch disposition?.base {
            case .useNewRequest(let newRequest):
                observed.withLock { $0.currentRequest = newRequest }
                beginLoading(newRequest)
            case .cancel:
                cancel()
            case .continueLoading, .unanswered, .none:
                beginLoading(request)
            }
        }
    }

    /// Loads `request`: from the cache when its policy allows, otherwise over the network.
    /// `now`: the time, when the caller has just read it (the task's start).
    func beginLoading(_ request: Request, now: Date? = nil) {
        let prepared = prepare(request)
        engine.request = prepared
        observed.withLock { $0.currentRequest = prepared }
        guard prepared.url.scheme == "http" || prepared.url.scheme == "https" else {
            fail(SessionError(.unsupportedURL, prepared.url, "only http and https URLs can be loaded"))
            return
        }
        let policy = prepared.cachePolicy ?? session.configuration.requestCachePolicy
        // A WebSocket handshake is never answered from, nor stored in, the cache.
        if let cache = session.configuration.responseCache, !(self is WebSocketTask), consultCache(prepared, policy: policy, cache: cache, now: now ?? TickClock.date) {
            return
        }
        guard policy.mayLoadFromNetwork else {
            engine.transactions.append(TransactionMetrics(request: prepared))
            fail(SessionError(.resourceUnavailable, prepared.url, "not in the cache, and the cache policy forbids the network"))
            return
        }
        sendToNetwork(prepared)
    }

    /// The request as it goes out: the session's additional headers, User-Agent and cookies added.
    private func prepare(_ request: Request) -> Request {
        var prepared = request
        // `session.configuration.…` each time, not a local copy of the whole configuration.
        for field in session.configuration.httpAdditionalHeaders where !prepared.headerFields.contains(field.name) {
            prepared.headerFields.add(name: field.name, value: field.value)
        }
        if let agent = session.configuration.userAgent, !prepared.headerFields.contains(.userAgent) {
            prepared.headerFields.add(name: .userAgent, value: agent)
        }
        if session.configuration.httpShouldSetCookies, let storage = session.configuration.cookieStorage,
            !prepared.headerFields.contains(.cookie), let cookies = storage.cookieHeader(for: prepared.url)
        {
            prepared.headerFields.add(name: .cookie, value: cookies)
        }
        applySessionAuthorization(to: &prepared)
        return prepared
    }

    /// Sends `request` over the network (after the cache declined to answer it, or again for a
    /// retry): finds its body — bytes and files are read again for each send; a stream is asked
    /// of the delegate each time (`needNewBodyStream`) — then ``sendRequest(_:body:)``.
    /// `resendingAfter`: the request goes again after this failure, which stays the task's error
    /// when a streamed body cannot be given again.
    func sendToNetwork(_ request: Request, resendingAfter lost: SessionError? = nil) {
        switch request.body {
        case .none:
            setExpectedToSend(0)
            sendRequest(request, body: .none)
        case .bytes(let buffer):
            setExpectedToSend(Int64(buffer.readableBytes))
            sendRequest(request, body: .bytes(buffer))
        case .file(let path):
            guard let size = FileSize.of(path) else {
                fail(SessionError(.requestBodyStreamExhausted, request.url, "cannot read the body file \(path)"))
                return
            }
            setExpectedToSend(size)
            sendRequest(request, body: .file(path: path, size: size, fileIO: session.fileIO))
        case .stream:
            let exchange = engine.machine.exchange
            ask(
                taskDelegates,
                { delegate, answer in delegate.task(self, needNewBodyStream: answer) },
                isUnanswered: { if case .unanswered = $0.base { true } else { false } }
            ) { [self] decision in
                guard engine.machine.accepts(exchange: exchange) else { return }
                guard case .stream(.some(let stream)) = decision?.base else {
                    guard var lost else {
                        fail(SessionError(.requestBodyStreamExhausted, request.url, "the delegate supplied no body stream"))
                        return
                    }
                    // A resend that cannot be made: the loss stays the task's error (a 502 at the
                    // proxy, whose client's upload streamed through once), saying why.
                    lost.detail += "; not sent again: its streamed body cannot be (the delegate supplied no new body stream)"
                    fail(lost)
                    return
                }
                // The stream of an earlier send is done with: the producer's writes still waiting
                // on it fail rather than wait for ever.
                if let earlier = engine.bodyStream, earlier !== stream { earlier.close() }
                engine.bodyStream = stream
                let declared = request.headerFields[.contentLength].flatMap { Int64($0) }
                setExpectedToSend(declared ?? -1)
                sendRequest(request, body: .stream(stream))
            }
        }
    }

    private func setExpectedToSend(_ count: Int64) {
        observed.withLock {
            $0.countOfBytesExpectedToSend = count
            $0.countOfBytesSent = 0
        }
    }

    /// Asks the pool for a connection and sends `request` on it.
    func sendRequest(_ request: Request, body: BodySource) {
        let exchange = engine.machine.sendingRequest()
        engine.body = body
        var metrics = TransactionMetrics(request: request)
        metrics.fetchStartDate = TickClock.date
        metrics.isProxyConnection = session.configuration.upstreamProxy != nil
        engine.transactions.append(metrics)
        let key = connectionKey(for: request.url)
        restartIdleTimer()
        if let connection = session.pool.leaseIdle(key: key, eventLoop: eventLoop) {
            engine.machine.leasing(0)
            connectionLeased(connection, request: request, body: body)
            return
        }
        let (leaseID, future) = session.pool.lease(key: key, priority: priority, eventLoop: eventLoop)
        engine.machine.leasing(leaseID)
        future.hop(to: eventLoop).whenComplete { [self] result in
            switch result {
            case .success(let connection):
                guard engine.machine.leaseAnswered(exchange: exchange) else {
                    session.pool.release(connection, reusable: true)
                    return
                }
                connectionLeased(connection, request: request, body: body)
            case .failure(let error):
                guard engine.machine.leaseAnswered(exchange: exchange) else { return }
                connectionFailed(error as? SessionError ?? SessionError(.cannotConnectToHost, request.url, "\(error)"))
            }
        }
    }

    /// A connection is the task's: the server's trust decided first on a new TLS connection, then
    /// the exchange.
    private func connectionLeased(_ connection: OriginConnection, request: Request, body: BodySource) {
        if connection.needsTrustDecision {
            decideServerTrust(on: connection) { [self] in
                decideClientCertificate(on: connection, request: request, body: body) { [self] in
                    startExchange(on: connection, request: request, body: body)
                }
            }
        } else {
            startExchange(on: connection, request: request, body: body)
        }
    }

    private func connectionKey(for url: HTTPURL) -> ConnectionKey {
        var key: ConnectionKey
        if let proxy = session.configuration.upstreamProxy {
            guard url.scheme == "https" || self is WebSocketTask else {
                return ConnectionKey(scheme: url.scheme, host: proxy.host, port: proxy.port, viaProxy: true)
            }
            // A CONNECT tunnel through the proxy: TLS, trust and requests are the origin's
            // (a WebSocket needs one for plain http too: the connection outlives the request).
            // The TLS inside is ours, so it offers h2 as a direct connection does.
            key = ConnectionKey(scheme: url.scheme, host: url.host, port: url.effectivePort, viaProxy: false, tunnelVia: proxy)
        } else {
            key = ConnectionKey(scheme: url.scheme, host: url.host, port: url.effectivePort, viaProxy: false)
        }
        key.offersHTTP2 = url.scheme == "https" && !(self is WebSocketTask)
        return key
    }

    private func connectionFailed(_ error: SessionError) {
        var error = error
        error.failingURL = engine.request?.url
        let retriable = error.code == .cannotConnectToHost || error.code == .cannotFindHost
        // Background sessions ignore waitsForConnectivity (seed 001): they fail and may be resumed.
        guard session.configuration.waitsForConnectivity, !session.isBackground, retriable, let request = engine.request else {
            fail(error)
            return
        }
        if !engine.reportedWaitingForConnectivity {
            engine.reportedWaitingForConnectivity = true
            DelegateDispatch.notify(taskDelegates) { $0.taskIsWaitingForConnectivity(self) }
        }
        // The idle timeout does not apply while waiting; the resource timeout ends the wait.
        stopIdleTimer()
        engine.transactions.removeLast()
        let body = engine.body
        let retry = eventLoop.scheduleTask(in: .milliseconds(500)) { [self] in
            guard engine.machine.connectivityRetryDue() else { return }
            sendRequest(request, body: body)
        }
        engine.machine.waitForConnectivity(retry)
    }

    private func startExchange(on connection: OriginConnection, request: Request, body: BodySource) {
        engine.machine.exchangeStarted(on: connection)
        connection.exchangeCount += 1
        if connection.exchangeCount == 1 {
            let made = connection.establishment
            engine.transaction.secureConnectionStartDate = made.secureConnectionStart
            engine.transaction.secureConnectionEndDate = made.secureConnectionEnd
            engine.transaction.domainLookupStartDate = made.domainLookupStart
            engine.transaction.domainLookupEndDate = made.domainLookupEnd
            engine.transaction.connectStartDate = made.connectStart
            engine.transaction.connectEndDate = made.connectEnd
        } else {
            engine.transaction.isReusedConnection = true
        }
        engine.transaction.remoteAddress = connection.establishment.remoteAddress
        engine.transaction.networkProtocolName = connection.protocolName
        engine.transaction.negotiatedTLSProtocolVersion = connection.establishment.tlsEvaluation?.protocolVersion.description
        engine.transaction.resourceFetchType = .networkLoad
        engine.requestDate = TickClock.date
        let head = RequestHeadEncoder(
            head: headForProxy(request.head, viaProxy: connection.key.viaProxy),
            bodyLength: body.knownLength,
            hasBody: request.body != nil,
            viaProxy: connection.key.viaProxy,
            allocator: connection.channel.allocator
        )
        let sink = TaskExchange(task: self, exchange: engine.machine.exchange, connectionLoop: connection.eventLoop)
        engine.exchange = sink
        let readNow = !engine.machine.isSuspended
        @Sendable func start() {
            connection.handler.startExchange(head: head, body: body, sink: sink)
            if !readNow { connection.handler.setReadDemand(false) }
        }
        // On the connection's loop already (the usual case: pooled connections are leased on the
        // task's loop), started at once: a closure for the other loop is an allocation, so one is
        // made only when needed.
        if connection.eventLoop.inEventLoop { start() } else { connection.eventLoop.execute(start) }
    }

    // MARK: request progress

    func requestHeadWritten(bytes: Int) {
        engine.transaction.requestStartDate = TickClock.date
        engine.transaction.countOfRequestHeaderBytesSent = Int64(bytes)
    }

    func requestBodyWritten(bytes: Int) {
        restartIdleTimer()
        engine.transaction.countOfRequestBodyBytesSent += Int64(bytes)
        let (sent, expected) = observed.withLock { state -> (Int64, Int64) in
            state.countOfBytesSent += Int64(bytes)
            return (state.countOfBytesSent, state.countOfBytesExpectedToSend)
        }
        DelegateDispatch.notify(taskDelegates) {
            $0.task(self, didSendBodyData: Int64(bytes), totalBytesSent: sent, totalBytesExpectedToSend: expected)
        }
    }

    func requestFinished() {
        engine.transaction.requestEndDate = TickClock.date
    }

    /// Whether the task has completed (or is completing).
    var isDone: Bool { engine.machine.isCompleted }
}
