import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import TollgateHTTP

/// Connecting a stream task and ending it.
extension StreamTask {
    func startStream() {
        engine.startDate = Date()
        guard let host = hostName, let port else { return }
        var metrics = TransactionMetrics(request: Request(url: .init(scheme: "tcp", host: host, port: port)))
        metrics.fetchStartDate = Date()
        metrics.domainLookupStartDate = Date()
        metrics.networkProtocolName = "tcp"
        metrics.resourceFetchType = .networkLoad
        engine.transactions.append(metrics)
        let loop = eventLoop
        // With an upstream proxy the connection is the proxy's, and a CONNECT to host:port opens
        // the tunnel (the proxy resolves the name), as a data task's https connection does.
        let proxy = session.configuration.upstreamProxy
        engine.transaction.isProxyConnection = proxy != nil
        let dialled = proxy.map { ($0.host, $0.port) } ?? (host, port)
        let tunnel = proxy.map { _ in (host: host, port: port) }
        let made: EventLoopFuture<any Channel>
        // The host's `connect-to` targets, or the session's proxies in their order, with the
        // health the session's pool keeps for its data tasks' connections.
        if let walk = ConnectionTargetWalk(
            host: host, port: port, proxy: proxy, configuration: session.pool.configuration, health: session.pool.targetHealth
        ) {
            // The destination rules are the origin's, checked on each `connect-to` target's
            // addresses (as the pool checks a data task's); a parent is not checked by them.
            let check = proxy == nil ? session.configuration.connectionAddressCheck : nil
            made = walk.run(on: loop) { [self] target, timeout in
                NameResolver(threadPool: NameLookupThreads.pool).resolve(host: target.host, port: target.port, on: loop).flatMap {
                    [self] addresses -> EventLoopFuture<any Channel> in
                    engine.transaction.domainLookupEndDate = Date()
                    engine.transaction.connectStartDate = Date()
                    switch ConnectionPool.allowed(addresses, host: host, port: port, check: check) {
                    case .success(let allowed): return connect(to: allowed, tunnel: tunnel, connectTimeout: timeout)
                    case .failure(let refusal): return loop.makeFailedFuture(refusal)
                    }
                }
            }
        } else {
            made = NameResolver(threadPool: NameLookupThreads.pool).resolve(host: dialled.0, port: dialled.1, on: loop).flatMap {
                [self] addresses -> EventLoopFuture<any Channel> in
                engine.transaction.domainLookupEndDate = Date()
                engine.transaction.connectStartDate = Date()
                return connect(to: addresses, tunnel: tunnel)
            }
        }
        made.whenComplete { [self] result in
            switch result {
            case .success(let channel):
                guard !isDone else {
                    channel.close(promise: nil)
                    return
                }
                engine.transaction.connectEndDate = Date()
                engine.transaction.remoteAddress = channel.remoteAddress.map { "\($0.ipAddress ?? "?"):\($0.port ?? 0)" }
                adopt(channel: channel, handler: try? channel.pipeline.syncOperations.handler(type: StreamConnectionHandler.self))
            case .failure(let error):
                var failure = error as? SessionError ?? SessionError(.cannotConnectToHost, nil, "\(host):\(port): \(error)")
                if failure.detail.isEmpty { failure.detail = "\(host):\(port)" }
                fail(failure)
                drainWaiters()
            }
        }
    }

    /// Takes a connected channel whose pipeline ends in a ``StreamConnectionHandler``.
    func adopt(channel: any Channel, handler: StreamConnectionHandler?) {
        self.channel = channel
        self.streamHandler = handler
        // The handler's callbacks are set on its own loop (the channel's), and hop to the task's.
        let inputClosed: @Sendable () -> Void = { [self] in
            onLoop { [self] in
                reportReadClosed()
                finishIfBothClosed()
            }
        }
        let inactive: @Sendable ((any Error)?) -> Void = { [self] failure in
            onLoop { [self] in
                if let failure, streamError == nil { streamError = Self.streamFailure(failure) }
                reportReadClosed()
                engine.transactions.last.map { _ in engine.transaction.responseEndDate = Date() }
                // A stream that broke completes with what broke it; one closed in order, without.
                complete(with: streamError)
            }
        }
        onChannelLoop {
            handler?.onInputClosed = inputClosed
            handler?.onInactive = inactive
            if !channel.isActive { inactive(handler?.failure) }
        }
        drainWaiters()
    }

    /// A stream without a connection (a response whose server closed after its body became a
    /// stream): reads get `bytes`, then EOF; it cannot write (`writeClosed` at once, as the seeds
    /// say of a stream that may only read), and it has completed.
    func adoptBytes(_ bytes: ByteBuffer) {
        let handler = StreamConnectionHandler()
        handler.prepend(bytes)
        handler.endInput()
        streamHandler = handler
        writeClosed = true
        let receivers = delegates(as: (any StreamTaskDelegate).self)
        DelegateDispatch.notify(receivers) { $0.streamTask(self, writeClosedFor: ()) }
        reportReadClosed()
        complete(with: nil)
        drainWaiters()
    }

    private func drainWaiters() {
        let waiting = waitingForChannel
        waitingForChannel = []
        for body in waiting { body() }
    }

    /// Connects to the first address that answers; with `tunnel`, the addresses are an upstream
    /// proxy's, and the channel is handed over once the proxy answered `CONNECT` with a 2xx.
    private func connect(
        to addresses: [SocketAddress],
        tunnel: (host: String, port: Int)?,
        retried: Bool = false,
        connectTimeout: TimeAmount = .seconds(10)
    ) -> EventLoopFuture<any Channel> {
        guard let first = addresses.first else {
            return eventLoop.makeFailedFuture(SessionError(.cannotConnectToHost, nil, "no address"))
        }
        let connectBox = NIOLockedValueBox<UpstreamConnectHandler?>(nil)
        let authentication = session.upstreamProxyAuthentication
        let connectFields = connectHeaderFields ?? session.configuration.upstreamProxyConnectHeaderFields
        return ClientBootstrap(group: eventLoop)
            .channelOption(.autoRead, value: false)
            .channelOption(.allowRemoteHalfClosure, value: true)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connectTimeout(connectTimeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tunnel {
                        let connect = UpstreamConnectHandler(
                            host: tunnel.host, port: tunnel.port, eventLoop: channel.eventLoop, passesLeftover: true,
                            authentication: authentication, headerFields: connectFields
                        )
                        try channel.pipeline.syncOperations.addHandler(connect)
                        connectBox.withLockedValue { $0 = connect }
                    }
                    try channel.pipeline.syncOperations.addHandler(StreamConnectionHandler())
                }
            }
            .connect(to: first)
            .flatMap { channel -> EventLoopFuture<any Channel> in
                guard let connect = connectBox.withLockedValue({ $0 }) else { return channel.eventLoop.makeSucceededFuture(channel) }
                return connect.established.futureResult.flatMapThrowing {
                    channel.pipeline.syncOperations.removeHandler(connect, promise: nil)
                    return channel
                }.flatMapErrorThrowing { error in
                    channel.close(promise: nil)
                    throw error
                }
            }
            .flatMapError { [self] error in
                if error is UpstreamConnectHandler.RetryWithCredential {
                    return retried
                        ? eventLoop.makeFailedFuture(UpstreamConnectHandler.RetryWithCredential.failure(tunnel))
                        : connect(to: addresses, tunnel: tunnel, retried: true, connectTimeout: connectTimeout)
                }
                // The proxy answered, and refused: another of its addresses would say the same.
                if error is SessionError { return eventLoop.makeFailedFuture(error) }
                let rest = Array(addresses.dropFirst())
                if rest.isEmpty {
                    return eventLoop.makeFailedFuture(
                        SessionError(.cannotConnectToHost, nil, "cannot connect to \(first.ipAddress ?? "?"):\(first.port ?? 0): \(error)")
                    )
                }
                return connect(to: rest, tunnel: tunnel, connectTimeout: connectTimeout)
            }
    }

    /// Cancel, timeout or failure: close the connection.
    func closeStream() {
        channel?.close(promise: nil)
    }
}
