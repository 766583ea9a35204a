import Foundation
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
        NameResolver(threadPool: .singleton).resolve(host: host, port: port, on: loop).flatMap { [self] addresses -> EventLoopFuture<any Channel> in
            engine.transaction.domainLookupEndDate = Date()
            engine.transaction.connectStartDate = Date()
            return connect(to: addresses)
        }.whenComplete { [self] result in
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
        let inactive: @Sendable () -> Void = { [self] in
            onLoop { [self] in
                reportReadClosed()
                engine.transactions.last.map { _ in engine.transaction.responseEndDate = Date() }
                complete(with: nil)
            }
        }
        onChannelLoop {
            handler?.onInputClosed = inputClosed
            handler?.onInactive = inactive
            if !channel.isActive { inactive() }
        }
        drainWaiters()
    }

    private func drainWaiters() {
        let waiting = waitingForChannel
        waitingForChannel = []
        for body in waiting { body() }
    }

    private func connect(to addresses: [SocketAddress]) -> EventLoopFuture<any Channel> {
        guard let first = addresses.first else {
            return eventLoop.makeFailedFuture(SessionError(.cannotConnectToHost, nil, "no address"))
        }
        return ClientBootstrap(group: eventLoop)
            .channelOption(.autoRead, value: false)
            .channelOption(.allowRemoteHalfClosure, value: true)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connectTimeout(.seconds(10))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(StreamConnectionHandler())
                }
            }
            .connect(to: first)
            .flatMapError { [self] error in
                let rest = Array(addresses.dropFirst())
                if rest.isEmpty {
                    return eventLoop.makeFailedFuture(
                        SessionError(.cannotConnectToHost, nil, "cannot connect to \(first.ipAddress ?? "?"):\(first.port ?? 0): \(error)")
                    )
                }
                return connect(to: rest)
            }
    }

    /// Cancel, timeout or failure: close the connection.
    func closeStream() {
        channel?.close(promise: nil)
    }
}
