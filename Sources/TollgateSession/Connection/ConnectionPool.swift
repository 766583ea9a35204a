import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import TollgateHTTP
import TollgateLoop
import TollgateTLS

/// The session's keep-alive connections, per origin: leases them to tasks, makes new ones up to
/// the per-host limit, queues tasks by priority when the limit is reached, and closes idle ones.
///
/// The decisions are made by ``OriginPoolState`` under the lock; the actions (connect, hand a
/// connection over, close) run outside it.
final class ConnectionPool: @unchecked Sendable {
    struct Configuration: Sendable {
        var maximumConnectionsPerHost: Int
        var idleTimeout: TimeAmount
        /// The TLS context for an https key (the session's per-host trust settings).
        var tlsContext: @Sendable (ConnectionKey) throws -> TLSContext? = { _ in nil }
        /// ``SessionConfiguration/connectionAddressCheck``.
        var connectionAddressCheck: (@Sendable (String, Int, SocketAddress) -> String?)? = nil
        /// ``SessionConfiguration/connectionTargets``.
        var connectionTargets: (@Sendable (String, Int) -> [ConnectionTarget])? = nil
        /// ``SessionConfiguration/connectionTargetChecks``.
        var connectionTargetChecks: (@Sendable () -> [ConnectionTargetCheck])? = nil
        /// ``SessionConfiguration/upstreamProxyFallbacks``.
        var upstreamProxyFallbacks: [UpstreamProxy] = []
        /// Answers the upstream proxy's 407 to a CONNECT (``SessionConfiguration/upstreamProxyCredential``).
        var proxyAuthentication: UpstreamProxyAuthentication? = nil
        /// ``SessionConfiguration/upstreamProxyConnectHeaderFields``.
        var connectHeaderFields: HeaderFields = [:]
    }

    /// A class, not a struct: reading `entries[key]?.connections[id]` or the state through the
    /// dictionary would otherwise copy the whole entry (its arrays, set and dictionaries) each
    /// time, and a lease copied and wrote it back — several of these per request.
    final class Entry {
        var state: OriginPoolState
        var connections: [Int: OriginConnection] = [:]
        /// When each idle connection was parked (its idle timeout counts from then).
        var idleSince: [Int: NIODeadline] = [:]

        init(state: OriginPoolState) {
            self.state = state
        }
    }

    private struct Waiter {
        var key: ConnectionKey
        var promise: EventLoopPromise<OriginConnection>
    }

    let configuration: Configuration
    let resolver: NameResolver
    let lock = NIOLock()
    var entries: [ConnectionKey: Entry] = [:]
    private var waiters: [Int: Waiter] = [:]
    var nextID = 0
    var isShutDown = false
    /// The active health checks of `connect-to` targets, when the session has any.
    private var targetChecker: ConnectionTargetChecker?
    /// Connections with an identifier up to this one are closed instead of reused (`flush`/`reset`).
    private var retiredThrough = 0

    /// `threadPool` runs the name lookups (``NameLookupThreads``).
    init(configuration: Configuration, threadPool: NIOThreadPool) {
        self.configuration = configuration
        self.resolver = NameResolver(threadPool: threadPool)
    }

    /// The bookkeeping for a new origin: h2 streams spread over as many connections as the
    /// origin's `connect-to` targets (the rules when its first connection is asked for).
    func poolState(for key: ConnectionKey, multiplexing: Bool) -> OriginPoolState {
        OriginPoolState(limit: configuration.maximumConnectionsPerHost, mayMultiplex: multiplexing, spread: spread(for: key, multiplexing: multiplexing))
    }

    /// How many h2 connections `key`'s streams spread over: its `connect-to` targets but the
    /// backups, as the rules say now (a backup's connection is made in place of one that fails).
    private func spread(for key: ConnectionKey, multiplexing: Bool) -> Int {
        guard multiplexing, !key.viaProxy, key.tunnelVia == nil, let targets = configuration.connectionTargets?(key.host, key.port) else { return 1 }
        return max(1, targets.count { !$0.isBackup })
    }

    /// Asks for a connection to `key`; the future completes when one is free or made.
    /// Returns an identifier with which the request can be withdrawn.
    func lease(key: ConnectionKey, priority: Float, eventLoop: any EventLoop) -> (id: Int, future: EventLoopFuture<OriginConnection>) {
        let promise = eventLoop.makePromise(of: OriginConnection.self)
        let (id, actions): (Int, OriginPoolState.Actions) = lock.withLock {
            nextID += 1
            let id = nextID
            if isShutDown { return (id, []) }
            waiters[id] = Waiter(key: key, promise: promise)
            let entry: Entry
            if let known = entries[key] {
                entry = known
            } else {
                entry = Entry(state: poolState(for: key, multiplexing: key.offersHTTP2))
                entries[key] = entry
            }
            let actions = entry.state.leaseRequested(waiter: id, priority: priority, loop: Self.loopID(eventLoop))
            return (id, actions)
        }
        if lock.withLock({ isShutDown }) {
            promise.fail(SessionError(.sessionInvalidated, nil, "the session's connections are closed"))
        }
        run(actions, key: key, eventLoop: eventLoop)
        return (id, promise.futureResult)
    }

    /// An idle connection to `key`, leased at once; nil when none is idle (then ``lease(key:priority:eventLoop:)``).
    /// The usual case for a keep-alive origin, without a promise, a future and a callback.
    func leaseIdle(key: ConnectionKey, eventLoop: any EventLoop) -> OriginConnection? {
        lock.withLock {
            guard !isShutDown, let entry = entries[key], let id = entry.state.takeIdle(loop: Self.loopID(eventLoop)) else {
                return nil
            }
            entry.idleSince.removeValue(forKey: id)
            return Self.lease(of: entry.connections[id])
        }
    }

    /// Withdraws a lease request that has not been served.
    func cancelLease(_ id: Int) {
        let waiter: Waiter? = lock.withLock {
            guard let waiter = waiters.removeValue(forKey: id) else { return nil }
            entries[waiter.key]?.state.waiterCancelled(id)
            return waiter
        }
        waiter?.promise.fail(SessionError(.cancelled))
    }

    /// Gives a connection back; a connection that is not reusable is closed.
    func release(_ connection: OriginConnection, reusable: Bool) {
        let now = TickClock.now
        var parked = false
        let actions: OriginPoolState.Actions = lock.withLock {
            guard let entry = entries[connection.key] else { return [] }
            if let http2 = connection.http2 {
                // A stream's end or failure says nothing of the connection: it is kept while it is
                // open and trusted, and drained (no new stream) once retired.
                guard http2.isTrustApproved, connection.channel.isActive else {
                    return entry.state.released(connection.id, reusable: false)
                }
                var drain: OriginPoolState.Actions = []
                if isShutDown || connection.id <= retiredThrough { drain = entry.state.goAwayReceived(connection.id) }
                return drain + entry.state.released(connection.id, reusable: true)
            }
            let keep = reusable && !isShutDown && connection.id > retiredThrough
            var actions = entry.state.released(connection.id, reusable: keep)
            // The usual answer, this connection parked: its idle time is noted under this lock
            // (not a second one, with a second lookup of its key, in ``watchIdle(key:connectionID:)``).
            if actions.first == .park(connection: connection.id) {
                entry.idleSince[connection.id] = now
                actions.removeFirst()
                parked = true
            }
            return actions
        }
        if parked { watchIdle(connection, since: now) }
        run(actions, key: connection.key, eventLoop: connection.eventLoop)
    }

    /// Takes a leased connection out of the pool without closing it (it became a stream task's).
    func detach(_ connection: OriginConnection) {
        // A stream of an h2 connection cannot leave with it (its handler refuses to convert): the
        // connection stays the pool's, and the stream is released.
        if connection.http2 != nil {
            release(connection, reusable: true)
            return
        }
        let actions: OriginPoolState.Actions = lock.withLock {
            entries[connection.key]?.connections.removeValue(forKey: connection.id)
            return entries[connection.key]?.state.detached(connection.id) ?? []
        }
        run(actions, key: connection.key, eventLoop: connection.eventLoop)
    }

    /// Makes every existing connection unusable for later requests: idle ones close now,
    /// leased ones when they are released, h2 ones take no new stream (closed once their last
    /// ends). The number of h2 connections to spread each origin's streams over is read again
    /// from the rules (a reload may have changed its `connect-to` targets).
    func retireConnections() {
        let (idle, drains): ([OriginConnection], [(ConnectionKey, any EventLoop, OriginPoolState.Actions)]) = lock.withLock {
            retiredThrough = nextID
            var drains: [(ConnectionKey, any EventLoop, OriginPoolState.Actions)] = []
            for (key, entry) in entries {
                guard entry.state.mayMultiplex else { continue }
                entry.state.spread(over: spread(for: key, multiplexing: true))
                for id in entry.state.multiplexed.keys {
                    guard let connection = entry.connections[id] else { continue }
                    let actions = entry.state.goAwayReceived(id)
                    if actions.first != nil { drains.append((key, connection.eventLoop, actions)) }
                }
            }
            return (entries.values.flatMap { entry in entry.state.idle.compactMap { entry.connections[$0] } }, drains)
        }
        for connection in idle { connection.channel.close(promise: nil) }
        for (key, loop, actions) in drains { run(actions, key: key, eventLoop: loop) }
    }

    /// Starts the active health checks of `connect-to` targets, when the session has any
    /// (``SessionConfiguration/connectionTargetChecks``), on `loop`, the server trust of TLS
    /// checks decided by `trust`; ``shutdown()`` stops them.
    func startTargetChecks(on loop: any EventLoop, trust: @escaping ProbeTrustDecision) {
        guard let checks = configuration.connectionTargetChecks else { return }
        // The pool's parts, not the pool: a weak reference would give the pool a side table, and
        // every retain and release of it — several a request — the slow path.
        let (configuration, resolver) = (self.configuration, self.resolver)
        let prober: ConnectionTargetChecker.Prober = { probe, target, timeout, loop in
            Self.probe(probe, at: target, timeout: timeout, trust: trust, configuration: configuration, resolver: resolver, on: loop)
        }
        let checker = ConnectionTargetChecker(loop: loop, checks: checks, resolver: resolver, health: targetHealth, prober: prober)
        let started = lock.withLock { () -> Bool in
            guard !isShutDown else { return false }
            targetChecker = checker
            return true
        }
        if started { checker.start() }
    }

    /// Closes every connection; later leases fail.
    func shutdown() {
        lock.withLock { targetChecker }?.stop()
        let connections: [OriginConnection] = lock.withLock {
            isShutDown = true
            let all = entries.values.flatMap { $0.connections.values }
            return all
        }
        for connection in connections { connection.channel.close(promise: nil) }
    }

    /// How many connections to `key` exist (idle, leased or being made); for tests and `/tasks`.
    func connectionCount(for key: ConnectionKey) -> Int {
        lock.withLock { entries[key]?.state.total ?? 0 }
    }

    /// Identifies an event loop for ``OriginPoolState``'s loop affinity.
    static func loopID(_ loop: any EventLoop) -> Int {
        ObjectIdentifier(loop).hashValue
    }

    // MARK: actions

    func run(_ actions: OriginPoolState.Actions, key: ConnectionKey, eventLoop: any EventLoop) {
        for action in actions {
            switch action {
            case .none:
                break
            case .connect:
                connect(key: key, eventLoop: eventLoop)
            case .lease(let connectionID, let waiterID):
                let (connection, waiter): (OriginConnection?, Waiter?) = lock.withLock {
                    // Its idle deadline stays registered: when it passes, the connection is
                    // found leased and nothing happens (no timer cancelled per lease).
                    entries[key]?.idleSince.removeValue(forKey: connectionID)
                    return (Self.lease(of: entries[key]?.connections[connectionID]), waiters.removeValue(forKey: waiterID))
                }
                if let connection, let waiter {
                    waiter.promise.succeed(connection)
                } else if let connection {
                    release(connection, reusable: true)
                }
            case .park(let connectionID):
                watchIdle(key: key, connectionID: connectionID)
            case .close(let connectionID):
                let connection = lock.withLock { entries[key]?.connections[connectionID] }
                connection?.channel.close(promise: nil)
            case .fail(let waiterID):
                // Only reached from connectFailed, which fails the waiter itself.
                _ = waiterID
            }
        }
    }

    /// A connection was parked: its idle timeout runs from now, as a deadline in its loop's
    /// `LoopDeadlines` (no NIO timer per park; a park is one per request when clients are fewer
    /// than connections).
    private func watchIdle(key: ConnectionKey, connectionID: Int) {
        let now = TickClock.now
        let connection: OriginConnection? = lock.withLock {
            guard let entry = entries[key], let connection = entry.connections[connectionID] else { return nil }
            entry.idleSince[connectionID] = now
            return connection
        }
        guard let connection else { return }
        watchIdle(connection, since: now)
    }

    /// Registers the idle deadline of `connection`, parked at `since`.
    private func watchIdle(_ connection: OriginConnection, since now: NIODeadline) {
        let due = now + configuration.idleTimeout
        if connection.eventLoop.inEventLoop {
            LoopDeadlines.of(connection.eventLoop).watch(connection, until: due)
        } else {
            connection.eventLoop.execute { LoopDeadlines.of(connection.eventLoop).watch(connection, until: due) }
        }
    }

    /// A parked connection's idle deadline passed (on its loop): closed if it has been idle for the
    /// whole timeout; watched again if it was parked anew since; left alone if it is leased.
    func idleDeadlinePassed(_ connection: OriginConnection) {
        let key = connection.key
        let (actions, later): (OriginPoolState.Actions, NIODeadline?) = lock.withLock {
            guard let entry = entries[key], let since = entry.idleSince[connection.id] else { return ([], nil) }
            let due = since + configuration.idleTimeout
            if due > TickClock.now { return ([], due) }
            entry.idleSince[connection.id] = nil
            return (entry.state.idleTimedOut(connection.id), nil)
        }
        if let later { LoopDeadlines.of(connection.eventLoop).watch(connection, until: later) }
        run(actions, key: key, eventLoop: connection.eventLoop)
    }

    /// The TLS context the session's https connections to `host:port` use (its per-host trust
    /// settings), for TLS a stream task starts itself.
    func tlsContext(host: String, port: Int) throws -> TLSContext? {
        try configuration.tlsContext(ConnectionKey(scheme: "https", host: host, port: port, viaProxy: false))
    }

    /// The order of each host's connection targets, and which failed lately.
    let targetHealth = NIOLockedValueBox(ConnectionTargetHealth())

    /// How many connections the pool has started to make (for tests of offline mode).
    var connectionsStarted: Int { started.withLockedValue { $0 } }
    private let started = NIOLockedValueBox(0)

    private func connect(key: ConnectionKey, eventLoop: any EventLoop) {
        started.withLockedValue { $0 += 1 }
        let record = NIOLockedValueBox(OriginConnection.Establishment())
        record.withLockedValue { $0.domainLookupStart = Date() }
        let direct = !key.viaProxy && key.tunnelVia == nil
        let proxy = key.tunnelVia ?? (key.viaProxy ? UpstreamProxy(host: key.host, port: key.port) : nil)
        let made: EventLoopFuture<(any Channel, OriginConnectionHandler)>
        if let walk = ConnectionTargetWalk(host: key.host, port: key.port, proxy: proxy, configuration: configuration, health: targetHealth) {
            made = walk.run(on: eventLoop) { target, timeout in
                self.resolver.resolve(host: target.host, port: target.port, on: eventLoop).flatMap { addresses in
                    self.connect(key: key, to: addresses, record: record, connectTimeout: timeout, on: eventLoop)
                }.map { made in
                    // The connection's target, for a resend after it is lost (not a parent's).
                    if direct { record.withLockedValue { $0.target = target } }
                    return made
                }
            }
        } else {
            let dialled = proxy.map { ($0.host, $0.port) } ?? (key.host, key.port)
            made = resolver.resolve(host: dialled.0, port: dialled.1, on: eventLoop).flatMap { addresses in
                self.connect(key: key, to: addresses, record: record, on: eventLoop)
            }
        }
        made.flatMap { channel, handler in
            guard let handshake = handler.handshake else { return eventLoop.makeSucceededFuture((channel, handler)) }
            record.withLockedValue {
                $0.connectEnd = Date()
                $0.secureConnectionStart = Date()
            }
            return handshake.futureResult.map { evaluation in
                record.withLockedValue {
                    $0.secureConnectionEnd = Date()
                    $0.tlsEvaluation = evaluation
                }
                return (channel, handler)
            }.flatMapErrorThrowing { error in
                channel.close(promise: nil)
                throw error
            }
        }.flatMapError { error in
            if error is SessionError { return eventLoop.makeFailedFuture(error) }
            return eventLoop.makeFailedFuture(SessionError(.cannotConnectToHost, nil, "\(key.host):\(key.port): \(error)"))
        }.whenComplete { [weak self] result in
            guard let self else { return }
            switch result {
            case .success(let (channel, handler)):
                let establishment = record.withLockedValue {
                    if $0.connectEnd == nil { $0.connectEnd = Date() }
                    $0.remoteAddress = channel.remoteAddress.map { "\($0.ipAddress ?? "?"):\($0.port ?? 0)" }
                    return $0
                }
                self.connected(channel: channel, handler: handler, key: key, establishment: establishment)
            case .failure(let error):
                self.connectFailed(key: key, error: error as? SessionError ?? SessionError(.cannotConnectToHost, nil, "\(error)"))
            }
        }
    }

    /// Connects to the first of `addresses` that answers (after the destination check), with the
    /// key's TLS handlers installed; the handshake is not awaited here.
    private func connect(
        key: ConnectionKey, to addresses: [SocketAddress], record: NIOLockedValueBox<OriginConnection.Establishment>,
        connectTimeout: TimeAmount = .seconds(10), on eventLoop: any EventLoop
    ) -> EventLoopFuture<(any Channel, OriginConnectionHandler)> {
        Self.connect(key: key, to: addresses, record: record, connectTimeout: connectTimeout, configuration: configuration, on: eventLoop)
    }

    /// ``connect(key:to:record:connectTimeout:on:)`` with `configuration`, for a health check's
    /// probe, which holds no reference to the pool.
    static func connect(
        key: ConnectionKey, to addresses: [SocketAddress], record: NIOLockedValueBox<OriginConnection.Establishment>,
        connectTimeout: TimeAmount = .seconds(10), configuration: Configuration, on eventLoop: any EventLoop
    ) -> EventLoopFuture<(any Channel, OriginConnectionHandler)> {
        record.withLockedValue {
            $0.domainLookupEnd = Date()
            $0.connectStart = Date()
        }
        var addresses = addresses
        if !key.viaProxy, key.tunnelVia == nil {
            switch Self.allowed(addresses, host: key.host, port: key.port, check: configuration.connectionAddressCheck) {
            case .success(let allowed): addresses = allowed
            case .failure(let refusal): return eventLoop.makeFailedFuture(refusal)
            }
        }
        let tls: TLSContext?
        do {
            tls = key.scheme == "https" && !key.viaProxy ? try configuration.tlsContext(key) : nil
        } catch {
            return eventLoop.makeFailedFuture(SessionError(.secureConnectionFailed, nil, "TLS settings for \(key.host): \(error)"))
        }
        return Self.connectToFirst(
            addresses, tls: tls, serverHostname: key.host,
            tunnel: key.tunnelVia.map { _ in (key.host, key.port) },
            authentication: configuration.proxyAuthentication,
            connectHeaderFields: configuration.connectHeaderFields, connectTimeout: connectTimeout, on: eventLoop
        )
    }

    private func connected(channel: any Channel, handler: OriginConnectionHandler, key: ConnectionKey, establishment: OriginConnection.Establishment) {
        if establishment.tlsEvaluation?.applicationProtocol == "h2" {
            connectedHTTP2(channel: channel, handler: handler, key: key, establishment: establishment)
            return
        }
        let (connection, actions): (OriginConnection, OriginPoolState.Actions) = lock.withLock {
            nextID += 1
            let connection = OriginConnection(id: nextID, key: key, channel: channel, handler: handler, establishment: establishment)
            connection.pool = self
            if entries[key] == nil {
                entries[key] = Entry(state: poolState(for: key, multiplexing: key.offersHTTP2))
            }
            entries[key]?.connections[connection.id] = connection
            let actions = isShutDown ? [.close(connection: connection.id)] : (entries[key]?.state.connected(connection.id, loop: Self.loopID(channel.eventLoop)) ?? [])
            return (connection, actions)
        }
        let id = connection.id
        channel.eventLoop.execute {
            handler.onClose = { [weak self] in self?.connectionClosed(key: key, id: id) }
            if !channel.isActive { handler.onClose?() }
        }
        run(actions, key: key, eventLoop: channel.eventLoop)
    }

    func connectionClosed(key: ConnectionKey, id: Int) {
        let (actions, connection): (OriginPoolState.Actions, OriginConnection?) = lock.withLock {
            let connection = entries[key]?.connections.removeValue(forKey: id)
            entries[key]?.idleSince.removeValue(forKey: id)
            let actions = entries[key]?.state.closed(id) ?? []
            if entries[key]?.state.isUnused == true { entries[key] = nil }
            return (actions, connection)
        }
        guard let connection else { return }
        // Called on the connection's loop (channelInactive): off its deadline heap at once.
        if connection.deadlineSlot.isWatched, connection.eventLoop.inEventLoop {
            LoopDeadlines.of(connection.eventLoop).unwatch(connection)
        }
        run(actions, key: key, eventLoop: connection.eventLoop)
    }

    func connectFailed(key: ConnectionKey, error: SessionError) {
        let (failed, actions, loop): (Waiter?, OriginPoolState.Actions, (any EventLoop)?) = lock.withLock {
            let actions = entries[key]?.state.connectFailed() ?? []
            var failed: Waiter?
            for case .fail(let waiterID) in actions { failed = waiters.removeValue(forKey: waiterID) }
            let nextLoop = entries[key]?.state.waiters.first.flatMap { waiters[$0.id]?.promise.futureResult.eventLoop }
            return (failed, actions, nextLoop ?? failed?.promise.futureResult.eventLoop)
        }
        failed?.promise.fail(error)
        if let loop { run(actions, key: key, eventLoop: loop) }
    }

    /// `addresses` without those `check` refuses for a connection to `host:port` (the destination
    /// rules), or the first refusal when it refuses them all.
    static func allowed(
        _ addresses: [SocketAddress], host: String, port: Int, check: (@Sendable (String, Int, SocketAddress) -> String?)?
    ) -> Result<[SocketAddress], SessionError> {
        guard let check else { return .success(addresses) }
        var refusals: [String] = []
        let allowed = addresses.filter { address in
            guard let why = check(host, port, address) else { return true }
            refusals.append(why)
            return false
        }
        if allowed.isEmpty, let why = refusals.first {
            return .failure(SessionError(.cannotConnectToHost, nil, "\(host):\(port): refused: \(why)"))
        }
        return .success(allowed)
    }

    /// A short reason for a connect failure ("Connection refused"), without NIO's error wrapping.
    static func reason(_ error: any Error) -> String {
        if let io = error as? IOError { return String(cString: strerror(io.errnoCode)) }
        if error is ChannelError { return "\(error)" }
        return "\(error)"
    }

    /// Tries each address in turn (IPv6 and IPv4 alike), keeping the first connection made. With
    /// `tunnel`, the addresses are an upstream proxy's: a `CONNECT` to the origin goes first, and
    /// TLS and HTTP start once the proxy answered 2xx.
    private static func connectToFirst(
        _ addresses: [SocketAddress],
        tls: TLSContext?,
        serverHostname: String,
        tunnel: (host: String, port: Int)? = nil,
        authentication: UpstreamProxyAuthentication? = nil,
        connectHeaderFields: HeaderFields = [:],
        retried: Bool = false,
        connectTimeout: TimeAmount = .seconds(10),
        on eventLoop: any EventLoop
    ) -> EventLoopFuture<(any Channel, OriginConnectionHandler)> {
        guard let first = addresses.first else {
            return eventLoop.makeFailedFuture(SessionError(.cannotConnectToHost, nil, "no address to connect to"))
        }
        let handlerBox = NIOLockedValueBox<OriginConnectionHandler?>(nil)
        let connectBox = NIOLockedValueBox<UpstreamConnectHandler?>(nil)
        let bootstrap = ClientBootstrap(group: eventLoop)
            .channelOption(.autoRead, value: false)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connectTimeout(connectTimeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tunnel {
                        let connect = UpstreamConnectHandler(
                            host: tunnel.host, port: tunnel.port, eventLoop: channel.eventLoop, authentication: authentication,
                            headerFields: connectHeaderFields
                        )
                        try channel.pipeline.syncOperations.addHandler(connect)
                        connectBox.withLockedValue { $0 = connect }
                    } else {
                        let handler = try installHTTPHandlers(on: channel, tls: tls, serverHostname: serverHostname)
                        handlerBox.withLockedValue { $0 = handler }
                    }
                }
            }
        return bootstrap.connect(to: first).flatMap { channel -> EventLoopFuture<(any Channel, OriginConnectionHandler)> in
            if let connect = connectBox.withLockedValue({ $0 }) {
                // Through the proxy's tunnel: the origin's TLS and HTTP replace the CONNECT handler.
                return connect.established.futureResult.flatMapThrowing {
                    channel.pipeline.syncOperations.removeHandler(connect, promise: nil)
                    let handler = try installHTTPHandlers(on: channel, tls: tls, serverHostname: serverHostname)
                    return (channel, handler)
                }.flatMapErrorThrowing { error in
                    channel.close(promise: nil)
                    throw error
                }
            }
            guard let handler = handlerBox.withLockedValue({ $0 }) else {
                return eventLoop.makeFailedFuture(SessionError(.cannotConnectToHost, nil, "pipeline not set up"))
            }
            return eventLoop.makeSucceededFuture((channel, handler))
        }.flatMapError { error in
            if error is UpstreamConnectHandler.RetryWithCredential {
                return retried
                    ? eventLoop.makeFailedFuture(UpstreamConnectHandler.RetryWithCredential.failure(tunnel))
                    : connectToFirst(
                        addresses, tls: tls, serverHostname: serverHostname, tunnel: tunnel,
                        authentication: authentication, connectHeaderFields: connectHeaderFields, retried: true,
                        connectTimeout: connectTimeout, on: eventLoop
                    )
            }
            if error is SessionError { return eventLoop.makeFailedFuture(error) }
            let rest = Array(addresses.dropFirst())
            if rest.isEmpty {
                return eventLoop.makeFailedFuture(
                    SessionError(.cannotConnectToHost, nil, "cannot connect to \(first.ipAddress ?? "?"):\(first.port ?? 0): \(ConnectionPool.reason(error))")
                )
            }
            return connectToFirst(
                rest, tls: tls, serverHostname: serverHostname, tunnel: tunnel, authentication: authentication,
                connectHeaderFields: connectHeaderFields, connectTimeout: connectTimeout, on: eventLoop
            )
        }
    }

    /// The origin connection's handlers: TLS (for https), the HTTP/1.1 codec and the exchange
    /// handler. Called on the channel's event loop.
    private static func installHTTPHandlers(
        on channel: any Channel,
        tls: TLSContext?,
        serverHostname: String
    ) throws -> OriginConnectionHandler {
        let handler = OriginConnectionHandler()
        if let tls {
            handler.tlsHandler = try channel.pipeline.syncOperations.addTLSClientHandler(
                context: tls, serverHostname: serverHostname
            )
            handler.handshake = channel.eventLoop.makePromise(of: TLSPeerEvaluation.self)
        }
        try channel.pipeline.syncOperations.addHandler(handler)
        return handler
    }
}
