public import NIOCore
public import NIOPosix
import TollgatePolicy
import TollgateTLS
public import TollgateSession

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A listener of the proxy: accepts client connections and serves their requests through
/// session tasks (DESIGN.md, "The path of one request").
///
/// ```swift
/// let server = try await ProxyServer.start(.init(listen: ListenAddress(host: "127.0.0.1", port: 0)))
/// print(server.boundAddress)            // 127.0.0.1:53211
/// await server.shutdown(gracePeriod: .seconds(10))
/// ```
///
/// The rules come from a ``ProxyPolicy`` (the running ``PolicyRuntime``, or a fixed one); the
/// listener registers its address with ``OwnListeners`` so that no request is sent back to the
/// proxy itself. The server prints nothing; the access log goes where its configuration says.
public final class ProxyServer: Sendable {
    /// The configuration the server was started with.
    public let configuration: Configuration
    /// Where requests get their session and rules.
    public let policy: any ProxyPolicy
    /// The address actually bound (the real port when port 0 was asked for).
    public let boundAddress: ListenAddress

    private let ownSession: Session?
    private let ownListeners: OwnListeners
    private let serverChannel: any Channel
    private let connections: OpenConnections
    private let group: any EventLoopGroup
    private let resolver: AddressResolver
    private let exchangesInFlight: ExchangesInFlight
    private let listenerTLS: ListenerTLS?

    /// How many names the listener's destination checks have looked up (for tests of offline mode).
    package var destinationLookups: Int { resolver.lookupCount }

    private init(
        configuration: Configuration,
        policy: any ProxyPolicy,
        ownSession: Session?,
        ownListeners: OwnListeners,
        serverChannel: any Channel,
        connections: OpenConnections,
        group: any EventLoopGroup,
        resolver: AddressResolver,
        exchangesInFlight: ExchangesInFlight,
        listenerTLS: ListenerTLS?
    ) {
        self.listenerTLS = listenerTLS
        self.resolver = resolver
        self.exchangesInFlight = exchangesInFlight
        self.configuration = configuration
        self.policy = policy
        self.ownSession = ownSession
        self.ownListeners = ownListeners
        self.serverChannel = serverChannel
        self.connections = connections
        self.group = group
        let local = serverChannel.localAddress
        self.boundAddress = ListenAddress(
            host: local?.ipAddress ?? configuration.listen.host,
            port: local?.port ?? configuration.listen.port
        )
    }

    /// The session of a server started without a policy (nil otherwise).
    public var session: Session? { ownSession }

    /// Binds the listener and starts accepting connections.
    /// - Parameters:
    ///   - configuration: where to listen, the mode, the access log, TLS. With TLS every
    ///     connection starts with a handshake, and the protocol it negotiates picks the pipeline
    ///     (``ClientProtocolSelection``).
    ///   - policy: sessions and rules per request; by default one session made with
    ///     ``defaultSessionConfiguration`` (invalidated at shutdown) and the default `access` and
    ///     `limits` of ``PolicyConfiguration``.
    ///   - ownListeners: the registry of the proxy's own addresses, shared by all its listeners.
    ///   - group: the event loops for the listener and its connections.
    /// - Throws: ``ProxyServerError/cannotListen(_:reason:)`` when the address cannot be bound,
    ///   ``ProxyServerError/badConfiguration(_:)`` when a proxy user's password file or the
    ///   listener's certificates are unusable.
    public static func start(
        _ configuration: Configuration = Configuration(),
        policy: (any ProxyPolicy)? = nil,
        ownListeners: OwnListeners = OwnListeners(),
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> ProxyServer {
        var ownSession: Session?
        let policy =
            policy
            ?? {
                let policy = StaticProxyPolicy(configuration: PolicyConfiguration(), eventLoopGroup: group)
                ownSession = policy.session
                return policy
            }()
        let authenticators: AuthenticatorCache
        let listenerTLS: ListenerTLS?
        do {
            authenticators = try AuthenticatorCache(policy: policy)
            listenerTLS = try configuration.tls.map {
                try ListenerTLS(
                    settings: $0,
                    configuredAddress: configuration.listen,
                    generation: policy.generation,
                    protocols: ClientProtocolSelection.offeredProtocols(for: configuration.mode),
                    policy: policy,
                    offline: configuration.offline,
                    metrics: configuration.metrics,
                    stapleArchive: configuration.stapleArchive
                )
            }
        } catch {
            ownSession?.invalidateAndCancel()
            throw ProxyServerError.badConfiguration("\(error)")
        }
        let connections = OpenConnections(metrics: configuration.metrics)
        let resolver = AddressResolver()
        let exchangesInFlight = ExchangesInFlight()
        let environment = ListenerEnvironment(
            mode: configuration.mode,
            policy: policy,
            accessLog: configuration.accessLog,
            metrics: configuration.metrics,
            ownListeners: ownListeners,
            authenticators: authenticators,
            resolver: resolver,
            interceptor: configuration.interceptor,
            offline: configuration.offline,
            exchangesInFlight: exchangesInFlight,
            rateLimiter: configuration.rateLimiter,
            proxyProtocol: configuration.proxyProtocol
        )
        let connectionCounter = configuration.connectionCounter
        let h2c = configuration.h2c
        let proxyProtocol = configuration.proxyProtocol
        let throttle = configuration.throttle
        let readsThrottled = throttle.map { $0.upload != nil || $0.latency > .zero } ?? false
        let bootstrap = ServerBootstrap(group: group)
            .backingOffAcceptFailures(
                label: configuration.listen.description, maximumConnections: configuration.maxConnections, metrics: configuration.metrics
            )
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .throttling(throttle)
            // TCP_NODELAY: NIO sets it on the listening socket, and accepted sockets inherit it;
            // no child option, so no setsockopt and no option futures per connection.
            .childChannelInitializer { channel in
                guard connections.add(channel) else {
                    return channel.eventLoop.makeFailedFuture(ChannelError.ioOnClosedChannel)
                }
                return channel.eventLoop.makeCompletedFuture {
                    // The listener's own handlers, at once or (PROXY protocol) after the header. A
                    // local function: called directly it makes no closure, so a connection to a
                    // listener without the PROXY protocol allocates nothing more for it.
                    func install(_ pipeline: ChannelPipeline.SynchronousOperations) throws {
                        // access.connection-limit: counted once the client's address is known
                        // (after a PROXY header), marked when over it (its requests get 429).
                        if let limit = policy.connectionLimit,
                            let address = environment.clientAddress(of: channel),
                            !connectionCounter.admit(channel, of: ClientLimitKey.of(address, ipv6Prefix: policy.access.ipv6ClientPrefix), limit: limit)
                        {
                            try pipeline.addHandler(ConnectionOverLimit(limit: limit))
                        }
                        if let listenerTLS {
                            // TLS: ALPN decides between HTTP/2 and HTTP/1.1 (ClientProtocolSelection).
                            let settings = listenerTLS.settings(policy: policy)
                            try pipeline.addTLSServerHandler(context: settings.context)
                            try pipeline.addHandler(
                                ClientProtocolSelectionHandler(environment: environment, clientAuth: settings.clientAuth)
                            )
                        } else if h2c {
                            // h2c: the first bytes decide between HTTP/2 and HTTP/1.1.
                            try pipeline.addHandler(HTTP2PrefaceSniffer(environment: environment))
                        } else {
                            // Named: an unnamed handler's name is made per connection ("handler0").
                            try pipeline.addHandler(ClientConnectionHandler(environment: environment), name: "tollgate.client")
                        }
                        if readsThrottled, let throttle {
                            // First, before TLS: the bytes on the wire are what a link delays.
                            try pipeline.addHandler(
                                InboundThrottleHandler(rate: throttle.upload, latency: TimeAmount(throttle.latency)),
                                position: .first
                            )
                        }
                    }
                    if proxyProtocol {
                        try channel.pipeline.syncOperations.addHandler(ProxyProtocolHandler(environment: environment, install: install(_:)))
                    } else {
                        try install(channel.pipeline.syncOperations)
                    }
                }
            }
        let serverChannel: any Channel
        do {
            serverChannel = try await bootstrap.bind(to: configuration.listen, inheriting: configuration.inheritedSocket)
                .get()
        } catch {
            listenerTLS?.stop()
            ownSession?.invalidateAndCancel()
            throw ProxyServerError.cannotListen(configuration.listen, reason: describe(error))
        }
        let server = ProxyServer(
            configuration: configuration,
            policy: policy,
            ownSession: ownSession,
            ownListeners: ownListeners,
            serverChannel: serverChannel,
            connections: connections,
            group: group,
            resolver: resolver,
            exchangesInFlight: exchangesInFlight,
            listenerTLS: listenerTLS
        )
        ownListeners.register(server.boundAddress)
        return server
    }

    /// Stops accepting, lets exchanges in flight finish for at most `gracePeriod`, then closes
    /// every connection that is still open. Idle keep-alive connections close at once; a
    /// connection with a request in flight closes after its response (`Connection: close`).
    public func shutdown(gracePeriod: Duration) async {
        // Only the first call asks connections to quiesce.
        let open = connections.beginClosing() ?? connections.open
        try? await serverChannel.close()
        for channel in connections.takeUnquiesced(open) {
            channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        }
        let loop = group.next()
        let settled = loop.makePromise(of: Void.self)
        EventLoopFuture.andAllComplete(open.map(\.closeFuture), on: loop).cascade(to: settled)
        let deadline = loop.scheduleTask(in: TimeAmount(gracePeriod)) { settled.succeed(()) }
        try? await settled.futureResult.get()
        deadline.cancel()
        let remaining = connections.open
        for channel in remaining { channel.close(promise: nil) }
        try? await EventLoopFuture.andAllComplete(remaining.map(\.closeFuture), on: loop).get()
        // An exchange whose connection just closed finishes (and is logged) when its task has
        // completed, a moment after the close: wait for that, briefly, so its line is not lost.
        let logged = ContinuousClock.now + .seconds(2)
        while !exchangesInFlight.isEmpty && ContinuousClock.now < logged {
            try? await Task.sleep(for: .milliseconds(5))
        }
        ownListeners.unregister(boundAddress)
        listenerTLS?.stop()
        ownSession?.invalidateAndCancel()
        // The exchanges just ended were logged; their lines must be out before the process exits.
        await configuration.accessLog.flush()
    }
}

/// A bind failure in words: the system's message for an errno, else the error's description.
func describe(_ error: any Error) -> String {
    if let error = error as? IOError { return String(cString: strerror(error.errnoCode)) }
    return "\(error)"
}
