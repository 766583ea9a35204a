public import NIOCore
import NIOHTTP1
public import NIOPosix
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
/// The server prints nothing; the access log goes where its configuration says.
public final class ProxyServer: Sendable {
    /// The configuration the server was started with.
    public let configuration: Configuration
    /// The session every exchange's task runs in.
    public let session: Session
    /// The address actually bound (the real port when port 0 was asked for).
    public let boundAddress: ListenAddress

    private let ownsSession: Bool
    private let serverChannel: any Channel
    private let connections: OpenConnections
    private let group: any EventLoopGroup

    private init(
        configuration: Configuration,
        session: Session,
        ownsSession: Bool,
        serverChannel: any Channel,
        connections: OpenConnections,
        group: any EventLoopGroup
    ) {
        self.configuration = configuration
        self.session = session
        self.ownsSession = ownsSession
        self.serverChannel = serverChannel
        self.connections = connections
        self.group = group
        let local = serverChannel.localAddress
        self.boundAddress = ListenAddress(
            host: local?.ipAddress ?? configuration.listen.host,
            port: local?.port ?? configuration.listen.port
        )
    }

    /// Binds the listener and starts accepting connections.
    /// - Parameters:
    ///   - configuration: where to listen, the mode, the access log.
    ///   - session: the session tasks run in; by default the server makes one with
    ///     ``defaultSessionConfiguration`` and invalidates it at shutdown.
    ///   - group: the event loops for the listener and its connections.
    /// - Throws: ``ProxyServerError/cannotListen(_:reason:)`` when the address cannot be bound.
    public static func start(
        _ configuration: Configuration = Configuration(),
        session: Session? = nil,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> ProxyServer {
        let ownsSession = session == nil
        let session = session ?? Session(configuration: defaultSessionConfiguration, eventLoopGroup: group)
        let connections = OpenConnections()
        let environment = ClientExchangeHandler.Environment(session: session, accessLog: configuration.accessLog)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                guard connections.add(channel) else {
                    return channel.eventLoop.makeFailedFuture(ChannelError.ioOnClosedChannel)
                }
                return channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    // Parse errors are answered by ClientExchangeHandler (with a Tollgate-Error code).
                    try pipeline.configureHTTPServerPipeline(withPipeliningAssistance: true, withErrorHandling: false)
                    try pipeline.addHandler(ClientExchangeHandler(environment: environment))
                }
            }
        let serverChannel: any Channel
        do {
            serverChannel = try await bootstrap.bind(host: configuration.listen.host, port: configuration.listen.port)
                .get()
        } catch {
            if ownsSession { session.invalidateAndCancel() }
            throw ProxyServerError.cannotListen(configuration.listen, reason: describe(error))
        }
        return ProxyServer(
            configuration: configuration,
            session: session,
            ownsSession: ownsSession,
            serverChannel: serverChannel,
            connections: connections,
            group: group
        )
    }

    /// Stops accepting, lets exchanges in flight finish for at most `gracePeriod`, then closes
    /// every connection that is still open. Idle keep-alive connections close at once; a
    /// connection with a request in flight closes after its response (`Connection: close`).
    public func shutdown(gracePeriod: Duration) async {
        // Only the first call asks connections to quiesce (the HTTP handlers accept that once).
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
        if ownsSession { session.invalidateAndCancel() }
        // The exchanges just ended were logged; their lines must be out before the process exits.
        await configuration.accessLog.flush()
    }
}

/// A bind failure in words: the system's message for an errno, else the error's description.
private func describe(_ error: any Error) -> String {
    if let error = error as? IOError { return String(cString: strerror(error.errnoCode)) }
    return "\(error)"
}

extension TimeAmount {
    /// The same length of time as a Swift `Duration`.
    fileprivate init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
