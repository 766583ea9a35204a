import NIOConcurrencyHelpers
import NIOCore

/// The pool's HTTP/2 connections: made like any https connection, they become multiplexed when the
/// TLS handshake chose `h2`; the pool then leases streams of them (``OriginPoolState+Streams``).
extension ConnectionPool {
    /// What a task gets for a connection the state leased: the connection itself (HTTP/1.1), or a
    /// new lease of one of its streams (HTTP/2). Called under the lock (counts the streams).
    static func lease(of connection: OriginConnection?) -> OriginConnection? {
        guard let connection, let http2 = connection.http2 else { return connection }
        http2.streamsLeased += 1
        return connection.streamLease(ordinal: http2.streamsLeased)
    }

    /// The TLS handshake chose `h2`: the HTTP/2 handlers replace the HTTP/1.1 one, and the pool
    /// hears of the server's SETTINGS (its stream capacity), GOAWAY and close.
    func connectedHTTP2(channel: any Channel, handler: OriginConnectionHandler, key: ConnectionKey, establishment: OriginConnection.Establishment) {
        channel.eventLoop.execute { [self] in
            let http2: HTTP2OriginConnection
            do {
                http2 = try HTTP2OriginConnection.install(on: channel, replacing: handler)
            } catch {
                channel.close(promise: nil)
                connectFailed(key: key, error: SessionError(.cannotConnectToHost, nil, "\(key.host):\(key.port): HTTP/2 setup: \(error)"))
                return
            }
            let (connection, actions): (OriginConnection, OriginPoolState.Actions) = lock.withLock {
                nextID += 1
                let connection = OriginConnection(
                    id: nextID, key: key, channel: channel, handler: HTTP2StreamExchange(connection: http2),
                    establishment: establishment, http2: http2
                )
                connection.pool = self
                let entry: Entry
                if let known = entries[key] {
                    entry = known
                } else {
                    entry = Entry(state: poolState(for: key, multiplexing: true))
                    entries[key] = entry
                }
                entry.connections[connection.id] = connection
                let actions: OriginPoolState.Actions =
                    isShutDown
                    ? [.close(connection: connection.id)]
                    : entry.state.connected(connection.id, loop: Self.loopID(channel.eventLoop), http2: true)
                return (connection, actions)
            }
            let id = connection.id
            http2.onClose = { [weak self] in self?.connectionClosed(key: key, id: id) }
            http2.onSettings = { [weak self] maximum in self?.streamCapacityChanged(key: key, id: id, maximum: maximum) }
            http2.onGoAway = { [weak self] in self?.goAwayReceived(key: key, id: id) }
            if !channel.isActive { http2.onClose?() }
            run(actions, key: key, eventLoop: channel.eventLoop)
        }
    }

    private func streamCapacityChanged(key: ConnectionKey, id: Int, maximum: Int) {
        let (actions, loop): (OriginPoolState.Actions, (any EventLoop)?) = lock.withLock {
            guard let entry = entries[key], let connection = entry.connections[id] else { return ([], nil) }
            return (entry.state.streamCapacityChanged(id, maximumConcurrentStreams: maximum), connection.eventLoop)
        }
        if let loop { run(actions, key: key, eventLoop: loop) }
    }

    private func goAwayReceived(key: ConnectionKey, id: Int) {
        let (actions, loop): (OriginPoolState.Actions, (any EventLoop)?) = lock.withLock {
            guard let entry = entries[key], let connection = entry.connections[id] else { return ([], nil) }
            return (entry.state.goAwayReceived(id), connection.eventLoop)
        }
        if let loop { run(actions, key: key, eventLoop: loop) }
    }

    /// Releases the lease of an exchange the server did not process (RFC 9113 §8.7): an HTTP/2
    /// connection that refused a stream (REFUSED_STREAM, or GOAWAY, whose frame NIOHTTP2 passes on
    /// only after it failed the refused streams) takes no new stream — its open ones finish — so
    /// the request sent again goes on another connection, not into the same refusal. An HTTP/1.1
    /// connection is closed, as after any failure.
    func releaseRefused(_ connection: OriginConnection) {
        guard connection.http2 != nil else {
            release(connection, reusable: false)
            return
        }
        let actions: OriginPoolState.Actions = lock.withLock {
            guard let entry = entries[connection.key] else { return [] }
            return entry.state.streamRefused(connection.id)
        }
        run(actions, key: connection.key, eventLoop: connection.eventLoop)
    }

    /// How many streams are open on the connections to `key` (for tests).
    func openStreamCount(for key: ConnectionKey) -> Int {
        lock.withLock { entries[key]?.state.multiplexed.values.reduce(0) { $0 + $1.open } ?? 0 }
    }
}
