import NIOCore
import NIOEmbedded
import TollgateHTTP
import TollgatePolicy
import TollgateSession

@testable import TollgateProxy

/// A clock a test moves by hand (the connection's timeouts go by it).
final class ManualConnectionClock: ConnectionClock {
    var now = NIODeadline.uptimeNanoseconds(0)
}

/// Counts the reads the handler in front of it asks the channel for.
final class ReadCounter: ChannelOutboundHandler {
    typealias OutboundIn = ByteBuffer
    private(set) var reads = 0

    func read(context: ChannelHandlerContext) {
        reads += 1
        context.read()
    }
}

/// An exchange a test drives: it records what the connection tells it and answers when told.
final class ScriptedExchange: ClientExchange {
    let head: ClientRequestHead
    let responder: any ClientResponder
    /// Run when the exchange starts (hold reads, answer at once …).
    var onStart: ((ScriptedExchange) -> Void)?
    private(set) var bodyBytes = 0
    private(set) var requestEnded = false
    private(set) var failure: ClientRequestError?
    private(set) var sawClientClose = false

    init(head: ClientRequestHead, responder: any ClientResponder) {
        self.head = head
        self.responder = responder
    }

    func start() { onStart?(self) }
    func clientBodyReceived(_ buffer: ByteBuffer) { bodyBytes += buffer.readableBytes }
    func clientRequestEnded() { requestEnded = true }
    func clientRequestFailed(_ error: ClientRequestError) {
        failure = error
        responder.sendOwnAnswer(error.answer, close: true)
    }
    func clientClosed() { sawClientClose = true }
    func clientWritabilityChanged(_ writable: Bool) {}
    private(set) var sawSendTimeout = false
    func clientSendTimedOut() { sawSendTimeout = true }

    /// Answers 200 with `body` (length-framed).
    func answer(_ body: String, close: Bool = false) {
        var added = responder.takeAddedFields()
        var fields = HeaderFields()
        fields.add(name: .contentLength, value: String(body.utf8.count))
        responder.sendHead(
            HTTPResponseHead(status: 200, headerFields: fields),
            adding: &added,
            framing: .contentLength,
            bodyLength: Int64(body.utf8.count),
            close: close
        )
        responder.sendBody(ByteBuffer(string: body))
        responder.sendEnd()
    }
}

/// A ``ClientConnectionHandler`` on an `EmbeddedChannel`, with a manual clock and scripted
/// exchanges: the client connection tested without sockets or sleeps.
final class EmbeddedClientConnection {
    let channel = EmbeddedChannel()
    let clock = ManualConnectionClock()
    let reads = ReadCounter()
    /// The exchanges started, in order.
    private(set) var exchanges: [ScriptedExchange] = []
    /// Run on each exchange as it starts.
    var onStart: ((ScriptedExchange) -> Void)?
    private let session: Session

    init(limits: PolicyConfiguration.Limits = PolicyConfiguration.Limits()) throws {
        var configuration = PolicyConfiguration()
        configuration.limits = limits
        let policy = StaticProxyPolicy(configuration: configuration)
        session = policy.session
        let environment = ListenerEnvironment(
            mode: .forward,
            policy: policy,
            accessLog: .off,
            metrics: ProxyMetrics(),
            ownListeners: OwnListeners(),
            authenticators: try AuthenticatorCache(policy: policy),
            resolver: AddressResolver()
        )
        let handler = ClientConnectionHandler(environment: environment, clock: clock) { [unowned self] head, _, responder, _ in
            let exchange = ScriptedExchange(head: head, responder: responder)
            exchange.onStart = onStart
            exchanges.append(exchange)
            return exchange
        }
        channel.remoteAddress = try SocketAddress(ipAddress: "127.0.0.1", port: 40000)
        try channel.pipeline.syncOperations.addHandler(reads)
        try channel.pipeline.syncOperations.addHandler(handler)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 3128)).wait()
    }

    deinit {
        session.invalidateAndCancel()
    }

    /// The client sends `text`.
    func send(_ text: String) throws {
        try channel.writeInbound(ByteBuffer(string: text))
        channel.embeddedEventLoop.run()
    }

    /// Every byte the connection wrote so far, as text.
    func written() throws -> String {
        channel.embeddedEventLoop.run()
        var text = ""
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { text += String(buffer: buffer) }
        return text
    }

    /// The responses the connection wrote so far.
    func responses() throws -> [RawResponse] {
        RawResponse.parseAll(Array(try written().utf8)).responses
    }

    /// The client's socket fills (`false`) or drains, as the channel reports it.
    func setClientWritable(_ writable: Bool) {
        channel.isWritable = writable
        channel.pipeline.fireChannelWritabilityChanged()
    }

    /// Moves the clock (and the loop's timers) on by `amount`.
    func advance(by amount: TimeAmount) {
        clock.now = clock.now + amount
        channel.embeddedEventLoop.advanceTime(to: clock.now)
    }

    var isOpen: Bool { channel.isActive }
}
