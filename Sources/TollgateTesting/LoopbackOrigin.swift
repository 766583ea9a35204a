import NIOConcurrencyHelpers
public import NIOCore
public import NIOPosix
public import TollgateHTTP
public import TollgateTLS

/// An HTTP origin on 127.0.0.1 for tests: it records and counts every request, and a script
/// answers each one through an ``OriginResponder`` — well, slowly, wrongly or not at all.
///
/// ```swift
/// let origin = try await LoopbackOrigin.start { request, respond in
///     respond.send(status: 200, headers: ["Cache-Control": "max-age=60"], body: "hello")
/// }
/// defer { origin.stop() }
/// ```
public final class LoopbackOrigin: Sendable {
    /// Answers one request; called on the connection's event loop.
    public typealias Script = @Sendable (RecordedRequest, OriginResponder) -> Void

    private let channel: any Channel
    private let state: NIOLockedValueBox<State>

    struct State {
        var requests: [RecordedRequest] = []
        var connections = 0
        var open: [ObjectIdentifier: any Channel] = [:]
    }

    /// The port it listens on.
    public let port: Int

    private init(channel: any Channel, state: NIOLockedValueBox<State>, isTLS: Bool) {
        self.isTLS = isTLS
        self.channel = channel
        self.state = state
        self.port = channel.localAddress?.port ?? 0
    }

    /// Starts an origin on 127.0.0.1 with an ephemeral port.
    public static func start(
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        tls: TLSConfiguration? = nil,
        script: @escaping Script
    ) async throws -> LoopbackOrigin {
        let state = NIOLockedValueBox(State())
        let tlsContext = try tls.map { try TLSContext(configuration: $0) }
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { child in
                let number = state.withLockedValue { state -> Int in
                    state.connections += 1
                    state.open[ObjectIdentifier(child)] = child
                    return state.connections
                }
                child.closeFuture.whenComplete { _ in
                    state.withLockedValue { _ = $0.open.removeValue(forKey: ObjectIdentifier(child)) }
                }
                return child.eventLoop.makeCompletedFuture {
                    if let tlsContext { _ = try child.pipeline.syncOperations.addTLSServerHandler(context: tlsContext) }
                    try child.pipeline.syncOperations.addHandler(
                        OriginConnectionScriptHandler(connectionNumber: number, state: state, script: script)
                    )
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        return LoopbackOrigin(channel: channel, state: state, isTLS: tls != nil)
    }

    /// `http://127.0.0.1:PORT` + path (`https` for an origin started with TLS).
    public func url(_ path: String = "/", host: String = "127.0.0.1") -> HTTPURL {
        HTTPURL(string: "\(isTLS ? "https" : "http")://\(host):\(port)\(path)")!
    }

    /// Whether the origin speaks TLS.
    public let isTLS: Bool

    /// Every request received so far, in order.
    public var requests: [RecordedRequest] { state.withLockedValue { $0.requests } }
    /// How many requests arrived.
    public var requestCount: Int { state.withLockedValue { $0.requests.count } }
    /// How many connections were accepted.
    public var connectionCount: Int { state.withLockedValue { $0.connections } }
    /// How many accepted connections are still open.
    public var openConnectionCount: Int { state.withLockedValue { $0.open.count } }

    /// Stops listening and closes every connection.
    public func stop() {
        let open = state.withLockedValue { Array($0.open.values) }
        for child in open { child.close(promise: nil) }
        channel.close(promise: nil)
    }
}

/// Parses requests on one origin connection and hands each to the script.
final class OriginConnectionScriptHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer

    private let connectionNumber: Int
    private let state: NIOLockedValueBox<LoopbackOrigin.State>
    private let script: LoopbackOrigin.Script
    private var parser = OriginRequestParser()
    private var count = 0
    /// After an upgrade: every byte is echoed back instead of parsed as HTTP.
    var echoesRawBytes = false

    init(connectionNumber: Int, state: NIOLockedValueBox<LoopbackOrigin.State>, script: @escaping LoopbackOrigin.Script) {
        self.connectionNumber = connectionNumber
        self.state = state
        self.script = script
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if echoesRawBytes {
            context.writeAndFlush(data, promise: nil)
            return
        }
        parser.feed(unwrapInboundIn(data))
        while true {
            switch parser.next() {
            case .needMore:
                return
            case .invalid:
                context.close(promise: nil)
                return
            case .request(let method, let target, let headers, let body):
                count += 1
                let request = RecordedRequest(
                    method: method, target: target, headerFields: headers, body: body,
                    connectionNumber: connectionNumber, requestNumberOnConnection: count
                )
                state.withLockedValue { $0.requests.append(request) }
                script(request, OriginResponder(channel: context.channel, isHead: method == "HEAD"))
            }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
