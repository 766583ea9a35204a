import NIOConcurrencyHelpers
import NIOCore
import TollgateHTTP
import TollgateTLS

/// Decides a health check's server trust: the evaluation of a finished handshake with `host:port`,
/// answered with the failure it means, nil when the server is trusted (``Session``'s delegate
/// decides, ``HealthCheckTrustDeciding``).
typealias ProbeTrustDecision = @Sendable (
    _ evaluation: TLSPeerEvaluation, _ host: String, _ port: Int, _ decided: @escaping @Sendable (SessionError?) -> Void
) -> Void

extension ConnectionPool {
    /// Runs a health check's `probe` against `target`: a connection made as a request's to the
    /// probe's host would be (the destination rules, the session's TLS settings for the host,
    /// ALPN `http/1.1`), the handshake's trust decided by `trust`, then the request, whose status
    /// must be one expected. The whole check must be over within `timeout`; the connection is
    /// closed after it either way. Fails with why, in words for `/upstreams` and the log.
    static func probe(
        _ probe: ConnectionTargetProbe, at target: ConnectionTarget, timeout: TimeAmount, trust: @escaping ProbeTrustDecision,
        configuration: Configuration, resolver: NameResolver, on loop: any EventLoop
    ) -> EventLoopFuture<Void> {
        let run = ProbeRun(promise: loop.makePromise(), loop: loop)
        let port = probe.tls ? 443 : 80
        let key = ConnectionKey(scheme: probe.tls ? "https" : "http", host: probe.host, port: port, viaProxy: false)
        let deadline = loop.scheduleTask(in: timeout) {
            run.finish(.failure(ConnectionTargetCheckError(description: "no answer within \(timeout.nanoseconds / 1_000_000) ms")))
        }
        run.promise.futureResult.whenComplete { _ in deadline.cancel() }
        let record = NIOLockedValueBox(OriginConnection.Establishment())
        resolver.resolve(host: target.host, port: target.port, on: loop).flatMap { addresses in
            Self.connect(key: key, to: addresses, record: record, connectTimeout: timeout, configuration: configuration, on: loop)
        }.whenComplete { result in
            switch result {
            case .failure(let error):
                run.finish(.failure(error))
            case .success(let (channel, handler)):
                run.channel = channel
                guard !run.isFinished else {
                    channel.close(promise: nil)
                    return
                }
                guard let handshake = handler.handshake else {
                    run.send(probe.request, host: probe.host, on: handler)
                    return
                }
                handshake.futureResult.whenComplete { result in
                    switch result {
                    case .failure(let error):
                        run.finish(.failure(ConnectionTargetCheckError(description: "TLS handshake failed: \(error)")))
                    case .success(let evaluation):
                        trust(evaluation, probe.host, port) { failure in
                            loop.execute {
                                if let failure {
                                    run.finish(.failure(ConnectionTargetCheckError(description: "not trusted: \(failure.detail)")))
                                    return
                                }
                                handler.approvePeer()
                                run.send(probe.request, host: probe.host, on: handler)
                            }
                        }
                    }
                }
            }
        }
        return run.promise.futureResult
    }
}

/// One health check's probe under way: finished once (by its answer, a failure or its deadline),
/// its connection closed then. Touched on its event loop only.
private final class ProbeRun: ExchangeSink, @unchecked Sendable {
    // @unchecked: every member is touched on `loop` alone.
    let promise: EventLoopPromise<Void>
    let loop: any EventLoop
    var channel: (any Channel)?
    private(set) var isFinished = false
    private var expected: ClosedRange<Int> = 200...399
    private var requestLine = ""

    init(promise: EventLoopPromise<Void>, loop: any EventLoop) {
        self.promise = promise
        self.loop = loop
    }

    func finish(_ result: Result<Void, any Error>) {
        loop.preconditionInEventLoop()
        guard !isFinished else { return }
        isFinished = true
        channel?.close(promise: nil)
        promise.completeWith(result)
    }

    /// Sends `request` on the connection (or passes, when there is none to send: a TLS check).
    func send(_ request: ConnectionTargetProbe.Request?, host: String, on handler: OriginConnectionHandler) {
        guard let request, !isFinished else {
            finish(.success(()))
            return
        }
        guard let url = HTTPURL(string: "http://\(host.contains(":") ? "[\(host)]" : host)\(request.path)") else {
            finish(.failure(ConnectionTargetCheckError(description: "\(request.path) is not a request target for \(host)")))
            return
        }
        expected = request.expectedStatuses
        requestLine = "\(request.method) \(request.path)"
        var fields: HeaderFields = request.headerFields["User-Agent"] == nil ? ["User-Agent": "tollgate-health-check"] : [:]
        for field in request.headerFields { fields.add(name: field.name, value: field.value) }
        fields.add(name: "Connection", value: "close")
        let head = HTTPRequestHead(method: request.method, url: url, headerFields: fields)
        let encoded = RequestHeadEncoder(
            head: head, bodyLength: 0, hasBody: false, viaProxy: false, allocator: channel?.allocator ?? ByteBufferAllocator()
        )
        handler.startExchange(head: encoded, body: .none, sink: self)
    }

    func exchangeDidWriteRequestHead(bytes: Int) {}
    func exchangeDidWriteBody(bytes: Int) {}
    func exchangeDidFinishRequest() {}
    func exchangeDidReceiveInterim(_ head: HTTPResponseHead) {}

    func exchangeDidReceiveHead(_ head: HTTPResponseHead) {
        // The status decides; the body is not read.
        if expected.contains(head.status) {
            finish(.success(()))
        } else {
            finish(.failure(ConnectionTargetCheckError(description: "\(requestLine) answered \(head.status)")))
        }
    }

    func exchangeDidReceiveBody(_ buffer: ByteBuffer) {}
    func exchangeDidReceiveEnd(reusable: Bool) {}

    func exchangeDidFail(_ error: SessionError, responseStarted: Bool) {
        finish(.failure(ConnectionTargetCheckError(description: "\(requestLine): \(error.detail.isEmpty ? "\(error)" : error.detail)")))
    }
}
