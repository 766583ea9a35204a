import Foundation
import NIOCore
import TollgateHTTP
import Logging
import TollgateLoop
import TollgatePolicy
import TollgateSession
import TollgateTLS

/// The proxy's side of one HTTP/1.1 client connection: parses requests (``RequestDecoder``),
/// checks the client and its credentials, hands each request to an exchange, and, after CONNECT
/// or an upgrade, relays raw bytes. What happens next is decided by its
/// ``ClientConnectionMachine``; responses are encoded by its ``ResponseWriter``; its timeouts are
/// ``ClientTimeouts`` on an injected ``ConnectionClock``; what it remembers between requests is
/// its ``ConnectionMemo``. Exchanges see it only as their ``ClientResponder`` (and, for tunnels,
/// a ``ClientTunnelHost``), with an ``ExchangeContext``.
///
/// Flow control: reads from the client are withheld while a request body piece waits for the
/// session to take it, while an exchange holds reads, and while more than
/// ``ClientConnectionMachine/readAheadLimit`` bytes of pipelined requests wait; the exchange is
/// told when the client's socket stops or starts being writable (it suspends or resumes its task).
///
/// Interception: after an intercepted CONNECT (``beginInterception(of:context:)``) a server-side
/// ``TLSHandler`` goes in front of this handler, which then reads the requests inside the client's
/// TLS as it read plain ones, in the ``ListenerMode/intercepted(origin:)`` mode.
///
/// Everything here runs on the channel's event loop; exchanges and relays call in from there
/// (hence `@unchecked Sendable`, which their `@Sendable` callbacks need).
final class ClientConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler, DeadlineWatcher, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// The listener's environment; its mode becomes ``ListenerMode/intercepted(origin:)`` when a
    /// CONNECT is intercepted.
    private(set) var environment: ListenerEnvironment
    private(set) var context: ChannelHandlerContext?
    var decoder: RequestDecoder
    let limits: PolicyConfiguration.Limits
    /// Where the timeouts read the time.
    let clock: any ConnectionClock
    /// What the connection remembers between requests; made when the handler is added (the
    /// client's address is the channel's).
    private var memoStorage: ConnectionMemo?
    var memo: ConnectionMemo { memoStorage! }
    private var clientAllowed = false

    var machine = ClientConnectionMachine()
    var writer = ResponseWriter()
    var timeouts: ClientTimeouts
    /// The handler's place in the loop's deadline list.
    package var deadlineSlot = DeadlineSlot()

    var exchange: (any ClientExchange)?
    var relay: StreamRelay?
    /// Inside ``processEvents()``.
    private var processing = false
    var flushScheduled = false
    /// Bytes were written since the last flush.
    var unflushed = false
    /// The host of an intercepted CONNECT, and whether the client's TLS handshake finished.
    var intercepted: (host: String, handshakeDone: Bool)?

    /// Makes the exchange for a request the connection does not refuse itself, in place of the
    /// proxy's own ``ForwardExchange`` and ``TunnelExchange``.
    typealias ExchangeMaker = (ClientRequestHead, RequestTarget, any ClientTunnelHost, ExchangeContext) -> any ClientExchange
    /// Tests' exchanges (nil: the proxy's).
    private let exchangeMaker: ExchangeMaker?
    /// The TLS version of a TLS listener's connection (its handshake is done before this handler
    /// is added); nil for plain HTTP.
    private let clientTLS: ClientTLS?

    /// - Parameters:
    ///   - clock: what the timeouts go by (tests move one by hand).
    ///   - exchangeMaker: tests' exchanges in place of the proxy's.
    ///   - clientTLS: the TLS version of a TLS listener's connection; nil for plain HTTP.
    init(
        environment: ListenerEnvironment,
        clock: any ConnectionClock = TickConnectionClock(),
        exchangeMaker: ExchangeMaker? = nil,
        clientTLS: ClientTLS? = nil
    ) {
        self.environment = environment
        self.clientTLS = clientTLS
        self.limits = environment.policy.limits
        self.clock = clock
        self.exchangeMaker = exchangeMaker
        self.decoder = Self.makeDecoder(limits)
        self.timeouts = ClientTimeouts(
            headerReadTimeout: TimeAmount(limits.headerReadTimeout),
            clientIdleTimeout: TimeAmount(limits.clientIdleTimeout),
            clientSendTimeout: TimeAmount(limits.clientSendTimeout)
        )
    }

    static func makeDecoder(_ limits: PolicyConfiguration.Limits) -> RequestDecoder {
        RequestDecoder(limits: .init(maxHeaderBytes: limits.maxHeaderBytes, maxHeaders: limits.maxHeaders))
    }

    /// The client's address as text ("-" when unknown).
    var clientAddress: String { memoStorage?.clientAddress ?? "-" }

    /// The listener is now an intercepted one (``beginInterception(of:context:)``).
    func becomeIntercepted(origin: HTTPURL) {
        environment.mode = .intercepted(origin: origin)
        intercepted = (host: origin.host, handshakeDone: false)
    }

    // MARK: lifecycle

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { machine.channelActivated() }
        let client = ConnectionMemo.forClient(
            at: environment.clientAddress(of: context.channel),
            in: context.pipeline.syncOperations,
            access: environment.policy.access,
            clientTLS: clientTLS
        )
        clientAllowed = client.allowed
        memoStorage = client.memo
        if machine.channelIsActive { updateTimers() }
    }

    func channelActive(context: ChannelHandlerContext) {
        machine.channelActivated()
        updateTimers()
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        cancelTimers()
        machine.channelDeactivated()
        self.context = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        machine.channelClosed()
        cancelTimers()
        exchange?.clientClosed()
        relay?.clientClosed()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let intercepted, !intercepted.handshakeDone, let error = error as? TLSError {
            interceptedHandshakeFailed(host: intercepted.host, error)
        }
        // A reset or another I/O failure: the connection is gone; channelInactive follows.
        context.close(promise: nil)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent {
            if machine.quiesceRequested() { closeNow() }
            return
        }
        if let completed = event as? TLSHandshakeCompleted, intercepted != nil {
            intercepted?.handshakeDone = true
            // The minted certificate's handshake asks the client for none; the HTTPS proxy's own
            // handshake may have verified one.
            let inner = ClientTLS(version: completed.evaluation.protocolVersion.description, inside: memo.clientTLS)
            memo.clientTLS = inner
            let selection = ClientProtocolSelection(negotiated: completed.evaluation.applicationProtocol)
            switch selection {
            case .http1: break  // this handler reads the requests inside the client's TLS
            case .http2:
                // The HTTP/2 front takes over between the minted TLS handler and this one, which
                // leaves: nothing was read inside the TLS yet, and the CONNECT was answered.
                do {
                    try selection.configure(
                        context.pipeline.syncOperations,
                        at: .before(self),
                        environment: environment,
                        remoteAddress: environment.clientAddress(of: context.channel),
                        clientTLS: inner
                    )
                } catch {
                    closeNow()
                    return
                }
                cancelTimers()
                context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            }
            return
        }
        if case ChannelEvent.inputClosed = event {
            let closeNow = machine.clientInputEnded()
            relay?.clientInputClosed()
            if closeNow { self.closeNow() }
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    // MARK: inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        // One event: the requests these bytes make (deadlines, tasks, the access log) share one
        // clock reading.
        TickClock.begin()
        defer { TickClock.end() }
        if let relay {
            relay.clientSent(bytes)
            return
        }
        guard !machine.isClosing else { return }
        decoder.feed(bytes)
        if machine.isServing, !machine.requestEnded { timeouts.requestBodyProgressed() }
        processEvents()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        noteClientWritability(context.channel.isWritable)
        exchange?.clientWritabilityChanged(context.channel.isWritable)
        context.fireChannelWritabilityChanged()
    }

    /// Turns decoded bytes into requests, one exchange at a time.
    func processEvents() {
        guard !processing else { return }
        processing = true
        defer { processing = false }
        while !machine.isClosing, relay == nil, !(machine.isServing && machine.requestEnded), let event = decoder.next() {
            handle(event)
        }
        if flushScheduled {
            // A head written while handling these bytes (a cache hit answers inside handle):
            // flushed now, without a task on the loop's queue for it.
            flushScheduled = false
            context?.flush()
            unflushed = false
        }
        updateTimers()
        resumeReadingIfPossible()
    }

    func handle(_ event: RequestDecoder.Event) {
        switch event {
        case .head(let head):
            machine.requestHeadReceived(head)
            timeouts.stop()
            if head.isConnect || head.isUpgrade {
                // The tunnel or the new protocol needs the client's half-close (EOF) as an event.
                context?.channel.setOption(.allowRemoteHalfClosure, value: true).whenComplete { _ in }
            }
            startExchange(for: head)
        case .body(let buffer):
            if !machine.responseDone { exchange?.clientBodyReceived(buffer) }
        case .end:
            let wasDone = machine.responseDone
            let action = machine.requestBodyEnded(bufferedBytes: decoder.bufferedBytes)
            if wasDone {
                run(action)
            } else {
                exchange?.clientRequestEnded()
            }
        case .failure(let error):
            switch machine.requestFailed(exchangeRunning: exchange != nil) {
            case .tellExchange: exchange?.clientRequestFailed(error)
            case .answerItself: answerItself(error.answer, close: true)
            }
            machine.closeAfterThisResponse()
        }
    }

    /// Decides who answers a request head: the connection itself (a denied client, a bad target,
    /// missing credentials) or an exchange.
    private func startExchange(for head: ClientRequestHead) {
        let memo = self.memo
        let rules = memo.exchangeRules(environment)
        let target: RequestTarget
        switch RequestAdmission.decide(head, clientAllowed: clientAllowed, environment: environment, memo: memo, rules: rules) {
        case .answer(let answer, let close):
            answerItself(answer, close: close)
            return
        case .exchange(let admitted):
            target = admitted
        }
        guard let context else { return }
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
        case .http(let url):
            let forward = ForwardExchange.admitted(head, url: url, responder: self, context: exchangeContext)
            exchange = forward
            forward.start()
        case .connect(let host, let port):
            let tunnel = TunnelExchange(head: head, host: host, port: port, connection: self, context: exchangeContext)
            exchange = tunnel
            tunnel.start()
        }
    }

    /// Answers the current request (or, with none, the bytes that could not be one) without an
    /// exchange, and logs it.
    func answerItself(_ answer: OwnResponse, close: Bool) {
        let request = machine.request
        let entry = AccessLogEntry(
            clientAddress: clientAddress,
            clientTLS: memoStorage?.clientTLS?.version,
            clientCertificate: memoStorage?.clientTLS?.certificate?.subject,
            time: Int(TickClock.date.timeIntervalSince1970),
            method: request?.method ?? "-",
            target: request?.target ?? "-",
            version: request?.versionText ?? "-",
            status: answer.status,
            bodyBytes: Int64(answer.body.readableBytes),
            referer: request?.headerFields[.referer],
            userAgent: request?.headerFields[.userAgent]
        )
        environment.accessLog.record(entry)
        sendOwnAnswer(answer, close: close)
    }

    // MARK: the cycle

    /// The response ended: go on with the next request, or close.
    func responseEnded() {
        exchange = nil
        run(machine.responseEnded(bufferedBytes: decoder.bufferedBytes))
    }

    /// Performs what the machine decided at the end of a request or response.
    private func run(_ action: ClientConnectionMachine.CycleAction) {
        switch action {
        case .none:
            return
        case .closeAfterFlush:
            closeAfterFlush()
        case .serveNextRequest:
            exchange = nil
            if processing { return }  // the loop in processEvents goes on
            // Not inside processEvents: an exchange's callback ended the response. A next request
            // already received is started from the event loop, after that callback has returned;
            // with none, reading and the idle timer resume now (nothing can start inside the
            // callback).
            guard decoder.bufferedBytes == 0 else {
                context?.eventLoop.execute { [self] in
                    if !machine.isClosing { processEvents() }
                }
                return
            }
            processEvents()
        }
    }

    /// Flushes once the current event-loop tick is over, so that a response head and the first
    /// body piece that came with it from the upstream leave in one write. While the client's
    /// bytes are being handled, ``processEvents()`` flushes when it is done.
    func flushSoon() {
        guard !flushScheduled, let context else { return }
        flushScheduled = true
        if processing { return }
        context.eventLoop.execute { [self] in
            flushScheduled = false
            self.context?.flush()
            unflushed = false
        }
    }

    /// Writes `buffer` without flushing it.
    func write(_ buffer: ByteBuffer, context: ChannelHandlerContext) {
        context.write(wrapOutboundOut(buffer), promise: nil)
        unflushed = true
    }

    /// Writes the held head, if any, ahead of whatever is written next.
    func releaseHeldHead(context: ChannelHandlerContext) {
        guard let head = writer.takeHeldHead() else { return }
        write(head, context: context)
    }

    func closeAfterFlush() {
        guard let context, !machine.isClosing else { return }
        machine.closeStarted()
        cancelTimers()
        releaseHeldHead(context: context)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(ByteBuffer())).whenComplete { _ in channel.close(promise: nil) }
    }

    func closeNow() {
        machine.closeStarted()
        cancelTimers()
        context?.close(promise: nil)
    }

    // MARK: reads

    func read(context: ChannelHandlerContext) {
        let relayWants = relay?.wantsClientBytes ?? false
        if machine.readRequested(bufferedBytes: decoder.bufferedBytes, decoderStopped: decoder.isStopped, relayWantsBytes: relayWants) {
            context.read()
        }
    }

    func resumeReadingIfPossible() {
        guard let context else { return }
        let relayWants = relay?.wantsClientBytes ?? false
        if machine.readsMayResume(bufferedBytes: decoder.bufferedBytes, decoderStopped: decoder.isStopped, relayWantsBytes: relayWants) {
            context.read()
        }
    }
}
