import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2
import TollgateHTTP
import TollgateLoop
import TollgatePolicy

/// The proxy's side of one HTTP/2 stream of a client: its request goes through the same path as
/// an HTTP/1.1 request (access, the target's classification, proxy authentication, then a
/// ``ForwardExchange`` with its session task, cache, access log and metrics), and the exchange
/// answers through this handler as its ``ClientResponder`` (``HTTP2StreamHandler+Responder``).
/// What happens next is decided by its ``HTTP2StreamMachine``.
///
/// A CONNECT stream (RFC 9113 §8.5) goes to a ``TunnelExchange`` like an HTTP/1.1 CONNECT: the
/// handler is its ``ClientTunnelHost`` (``HTTP2StreamHandler+Tunnel``), DATA payloads being the
/// tunnel's bytes.
///
/// Flow control: a read is let through only while no request body piece waits for the session
/// and no exchange holds reads; the stream channel sends WINDOW_UPDATE only for what was read,
/// so a held stream stops its client. The other way, the stream channel is writable while the
/// client's window (and NIO's small outbound buffer) takes more: the exchange suspends its task
/// when it is not, as it does for an HTTP/1.1 socket.
///
/// Runs on the connection's event loop (hence `@unchecked Sendable`, which the exchanges'
/// `@Sendable` callbacks need).
final class HTTP2StreamHandler: ChannelDuplexHandler, RemovableChannelHandler, @unchecked Sendable {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    let connection: HTTP2FrontConnection
    var context: ChannelHandlerContext?
    var machine = HTTP2StreamMachine()
    var exchange: (any ClientExchange)?
    /// The request, once mapped (for the access log of an answer of the proxy's own).
    var request: ClientRequestHead?
    /// END_STREAM went out (with the response head, after the body, or a tunnel's half-close).
    var endStreamSent = false
    /// The write of an answer of the proxy's own that ends the stream, which a RST_STREAM
    /// NO_ERROR after it must wait for.
    var endStreamWrite: EventLoopFuture<Void>?
    /// A CONNECT stream's relay, once its tunnel is open.
    var relay: StreamRelay?
    /// A CONNECT stream's bytes that came before its tunnel was open (one read's worth at most:
    /// reads are held meanwhile); the relay's or the intercepting TLS's first bytes.
    var earlyTunnelBytes = ByteBuffer()
    /// The request body's idle timeout (`limits.client-idle-timeout`), while the proxy waits for
    /// the client's bytes (``HTTP2StreamMachine/waitsForClientBody``).
    private var bodyTimer: Scheduled<Void>?
    /// `limits.client-send-timeout`, while the stream cannot be written to (``watchSend(writable:)``).
    private var sendTimer: Scheduled<Void>?

    /// Makes the exchange for a request the stream does not refuse itself, in place of the
    /// proxy's ``ForwardExchange``.
    typealias ExchangeMaker = (ClientRequestHead, RequestTarget, any ClientResponder, ExchangeContext) ->
        any ClientExchange
    /// Tests' exchanges (nil: the proxy's).
    private let exchangeMaker: ExchangeMaker?

    /// - Parameter exchangeMaker: tests' exchanges in place of the proxy's.
    init(connection: HTTP2FrontConnection, exchangeMaker: ExchangeMaker? = nil) {
        self.connection = connection
        self.exchangeMaker = exchangeMaker
    }

    var environment: ListenerEnvironment { connection.environment }

    // MARK: lifecycle

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        bodyTimer?.cancel()
        sendTimer?.cancel()
        if machine.closed() { exchange?.clientClosed() }
        exchange = nil
        relay?.clientClosed()
        relay = nil
        context.fireChannelInactive()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        watchSend(writable: context.channel.isWritable)
        exchange?.clientWritabilityChanged(context.channel.isWritable)
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // A shutdown's quiescing is the connection's business (GOAWAY, then the streams in
        // flight finish): a stream just goes on.
        if event is ChannelShouldQuiesceEvent { return }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A stream error (NIO has reset the stream) or a write that failed: the stream is over.
        context.close(promise: nil)
    }

    // MARK: inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        TickClock.begin()
        defer { TickClock.end() }
        switch unwrapInboundIn(data) {
        case .headers(let headers):
            switch machine.headersReceived(endStream: headers.endStream) {
            case .startRequest: start(headers.headers, endStream: headers.endStream)
            case .endRequest:
                exchange?.clientRequestEnded()
                relay?.clientInputClosed()
            case .ignore: break
            }
            watchBody()
        case .data(let data):
            switch machine.dataReceived(endStream: data.endStream) {
            case .body(let thenEnd):
                if case .byteBuffer(let buffer) = data.data, buffer.readableBytes > 0 {
                    exchange?.clientBodyReceived(buffer)
                }
                if thenEnd { exchange?.clientRequestEnded() }
            case .tunnel(let thenEnd):
                if case .byteBuffer(var buffer) = data.data, buffer.readableBytes > 0 {
                    if let relay {
                        relay.clientSent(buffer)
                    } else {
                        earlyTunnelBytes.writeBuffer(&buffer)
                    }
                }
                if thenEnd { relay?.clientInputClosed() }
            case .ignore:
                break
            }
            watchBody()
        default:
            // RST_STREAM closes the channel (channelInactive follows); the rest is the connection's.
            break
        }
    }

    /// Maps the request's header block and decides who answers it: the stream itself (a
    /// malformed block, a denied client, a refused target, missing credentials) or an exchange.
    private func start(_ block: HPACKHeaders, endStream: Bool) {
        _ = connection.streamStarted(on: context?.channel.parent)
        let forward = if case .forward = environment.mode { true } else { false }
        let mapped: HTTP2RequestMapping.Mapped
        do throws(HTTP2RequestMapping.Malformed) {
            mapped = try HTTP2RequestMapping.map(
                block.map { (name: $0.name, value: $0.value) },
                endStream: endStream,
                absoluteTarget: forward
            )
        } catch {
            reset(.protocolError)
            return
        }
        let head: ClientRequestHead
        switch mapped {
        case .refuse(let answer):
            request = Self.placeholder(block)
            answerItself(answer)
            return
        case .request(let mappedHead):
            head = mappedHead
        }
        request = head
        let memo = connection.memo
        let rules = memo.exchangeRules(environment)
        let target: RequestTarget
        switch RequestAdmission.decide(
            head,
            clientAllowed: connection.clientAllowed,
            environment: environment,
            memo: memo,
            rules: rules
        ) {
        case .answer(let answer, _):
            // A denied client's stream alone is answered: the connection's close is HTTP/1.1's way.
            answerItself(answer)
            return
        case .exchange(let admitted):
            target = admitted
        }
        guard let context else { return }
        // A CONNECT, or an extended CONNECT (RFC 8441) mapped to its WebSocket upgrade: the
        // stream's DATA is held for the relay, not a request body.
        switch target {
        case .connect: machine.tunnelRequested()
        case .http where block.contains(name: ":protocol"): machine.tunnelRequested()
        case .http, .refuse: break
        }
        let exchangeContext = memo.exchangeContext(environment, eventLoop: context.eventLoop, rules: rules)
        if let exchangeMaker {
            let made = exchangeMaker(head, target, self, exchangeContext)
            exchange = made
            made.start()
            return
        }
        switch target {
        case .refuse:
            break
        case .connect(let host, let port):
            let tunnel = TunnelExchange(head: head, host: host, port: port, connection: self, context: exchangeContext)
            exchange = tunnel
            tunnel.start()
        case .http(let url):
            let forwardExchange = ForwardExchange.admitted(head, url: url, responder: self, context: exchangeContext)
            exchange = forwardExchange
            forwardExchange.start()
        }
    }

    /// A request head for the log of a refused request that has no head of its own (CONNECT).
    private static func placeholder(_ block: HPACKHeaders) -> ClientRequestHead {
        ClientRequestHead(
            method: block.first(name: ":method") ?? "-",
            target: block.first(name: ":authority") ?? block.first(name: ":path") ?? "-",
            minorVersion: 1,
            headerFields: HeaderFields(),
            framing: .none,
            byteCount: 0,
            isHTTP2: true
        )
    }

    /// Answers the request without an exchange, and logs it.
    func answerItself(_ answer: OwnResponse) {
        let entry = AccessLogEntry(
            clientAddress: connection.memo.clientAddress,
            time: Int(TickClock.date.timeIntervalSince1970),
            method: request?.method ?? "-",
            target: request?.target ?? "-",
            version: "HTTP/2.0",
            status: answer.status,
            bodyBytes: Int64(answer.body.readableBytes),
            referer: request?.headerFields[.referer],
            userAgent: request?.headerFields[.userAgent]
        )
        environment.accessLog.record(entry)
        sendOwnAnswer(answer, close: false)
    }

    /// Resets the stream with `code` and closes its channel.
    func reset(_ code: HTTP2ErrorCode) {
        guard let context else { return }
        _ = machine.responseEnded()
        context.writeAndFlush(wrapOutboundOut(.rstStream(code)), promise: nil)
        context.close(promise: nil)
    }

    /// (Re)starts the body's idle timeout while the proxy waits for the client's bytes, and
    /// stops it otherwise. A client that stops sending its body is answered 408 (or, with the
    /// response begun, the stream is reset), as on HTTP/1.1.
    func watchBody() {
        bodyTimer?.cancel()
        bodyTimer = nil
        guard machine.waitsForClientBody, let context else { return }
        let limit = environment.policy.limits.clientIdleTimeout
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        bodyTimer = context.eventLoop.scheduleTask(in: TimeAmount(limit)) {
            let stream = handler.value
            guard stream.machine.waitsForClientBody else { return }
            stream.exchange?.clientRequestFailed(.timedOut("no request body bytes for \(limit)"))
        }
    }

    /// Starts `limits.client-send-timeout` when the stream stops taking bytes — its client's
    /// window stays shut, or the connection's socket is full — and stops it when it takes them
    /// again. Run out, the exchange is told (the access log's `client-send-timeout`) and that
    /// its client left (a response being stored is still stored), and the stream is reset
    /// with CANCEL, as an HTTP/1.1 connection is closed.
    private func watchSend(writable: Bool) {
        sendTimer?.cancel()
        sendTimer = nil
        guard !writable, relay == nil, exchange != nil, let context else { return }
        let limit = environment.policy.limits.clientSendTimeout
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        sendTimer = context.eventLoop.scheduleTask(in: TimeAmount(limit)) {
            let stream = handler.value
            guard let context = stream.context, !context.channel.isWritable, stream.relay == nil, let exchange = stream.exchange
            else { return }
            exchange.clientSendTimedOut()
            if stream.machine.closed() { exchange.clientClosed() }
            stream.exchange = nil
            context.writeAndFlush(stream.wrapOutboundOut(.rstStream(.cancel)), promise: nil)
            context.close(promise: nil)
        }
    }

    // MARK: reads

    func read(context: ChannelHandlerContext) {
        if machine.readRequested(relayWantsBytes: relay?.wantsClientBytes ?? true) { context.read() }
    }
}
