import Foundation
import NIOCore
import TollgateHTTP
import Logging
import TollgateLoop
import TollgatePolicy
import TollgateSession
import TollgateTLS

/// The proxy's side of one client connection: parses requests (``RequestDecoder``), checks the
/// client and its credentials, hands each request to an exchange, writes the exchange's response
/// with the right framing, and, after CONNECT or an upgrade, relays raw bytes.
///
/// One exchange at a time: a pipelined request waits in the decoder until the response to the
/// one before it has ended, which keeps responses in request order; reading stops when more
/// than ``readAheadLimit`` bytes wait that way.
///
/// Flow control: reads from the client are withheld while a request body piece waits for the
/// session to take it, and the exchange is told when the client's socket stops or starts being
/// writable (it suspends or resumes its task).
///
/// Timeouts (`limits`): a connection waiting for a request with no byte of one for
/// `client-idle-timeout` is closed; a client that has started a head and not finished it within
/// `header-read-timeout` gets 408 and is closed (slowloris); a request body with no byte for
/// `client-idle-timeout` gets the same.
///
/// Interception: after an intercepted CONNECT (``beginInterception(of:context:)``) a server-side
/// ``TLSHandler`` goes in front of this handler, which then reads the requests inside the client's
/// TLS as it read plain ones, in the ``ListenerMode/intercepted(origin:)`` mode.
///
/// Everything here runs on the channel's event loop; exchanges and relays call in from there
/// (hence `@unchecked Sendable`, which their `@Sendable` callbacks need).
final class ClientConnectionHandler: ChannelDuplexHandler, DeadlineWatcher, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// Bytes of pipelined requests read ahead at most while a response is in progress.
    static let readAheadLimit = 64 * 1024

    /// The listener's environment; its mode becomes ``ListenerMode/intercepted(origin:)`` when a
    /// CONNECT is intercepted.
    private(set) var environment: ListenerEnvironment
    private(set) var context: ChannelHandlerContext?
    private var decoder: RequestDecoder
    private let limits: PolicyConfiguration.Limits
    private(set) var clientAddress = "-"
    /// The lines the proxy last added to a forwarded request (``forwardingLines(minorVersion:originalHost:make:)``).
    private var forwardingLinesAnswer = LastAnswer<ForwardingLinesKey, HeaderFields>()
    /// What those lines depend on besides the client's address, which is fixed.
    private struct ForwardingLinesKey: Equatable {
        let minorVersion: Int
        let originalHost: String?
    }
    /// The client connects over loopback (``StoredBodyTransfer``).
    private(set) var clientIsLoopback = false
    /// Whether the client is one of `access.trusted-forwarders`, whose forwarding fields are kept.
    private(set) var clientTrustedForwarder = false
    /// The last host parsed for this connection's requests (a keep-alive client asks one host).
    private var canonicalHostAnswer = LastAnswer<String, CanonicalHost>()
    /// The rules this connection's exchanges go by, until the policy changes (``exchangeRules()``).
    private var rules: ExchangeRules?
    /// The last request's route, for the next to the same host and port (``route(for:)``).
    private var keptRoute: KeptRoute?
    private var clientAllowed = false

    /// The request being served (nil while waiting for one).
    private(set) var request: ClientRequestHead?
    private var requestEnded = false
    private var exchange: (any ClientExchange)?
    /// The response to `request` has ended (or was given by the connection itself).
    private var responseDone = false
    private var relay: StreamRelay?

    private var closing = false
    /// The channel is active, as its events said (`channel.isActive` copies the channel's
    /// lifecycle state and was read several times per request).
    private var channelIsActive = false
    private var quiescing = false
    private var closeAfterResponse = false
    private var framing = ResponseFraming.none
    private var clientInputClosed = false
    private var processing = false
    private var flushScheduled = false
    /// The encoded head of a response whose body has a known length, not yet written: it goes
    /// out with the first body piece, in the same buffer when the piece is small (one write
    /// through the pipeline and one iovec instead of two: a 1 KiB cache hit is mostly head).
    private var heldHead: ByteBuffer?
    /// Bytes were written since the last flush.
    private var unflushed = false
    /// The last response head's buffer, kept for the next response (``responseBuffer(capacity:context:)``).
    private var spareResponseBuffer: ByteBuffer?
    /// The last response's list of proxy-added fields, kept for the next (``takeAddedFields()``).
    private var spareAddedFields = HeaderFields()
    /// The last `Cache-Status` value written and the outcome it describes (``cacheStatus(for:)``).
    private var cacheStatusAnswer = LastAnswer<CacheOutcome, String>()

    private var readPending = false
    private var piecesInFlight = 0
    private var readHolds = 0

    /// The host of an intercepted CONNECT, and whether the client's TLS handshake finished.
    private var intercepted: (host: String, handshakeDone: Bool)?

    // The three timeouts are deadlines watched through the loop's `LoopDeadlines` (no NIO timer
    // per connection or request): told when the earliest registered one passes, the handler acts
    // on those that really passed and registers the rest. A deadline cleared meanwhile (a request
    // came) just finds nothing to do.
    /// When the connection, idle since it last finished a request, is closed; nil while a request
    /// is being read or served.
    private var idleDeadline: NIODeadline?
    /// When a request head begun must be complete (`limits.header-read-timeout`).
    private var headDeadline: NIODeadline?
    /// When the next piece of a request body must have arrived (`limits.client-idle-timeout`).
    private var bodyDeadline: NIODeadline?
    /// The handler's place in the loop's deadline list.
    package var deadlineSlot = DeadlineSlot()

    init(environment: ListenerEnvironment) {
        self.environment = environment
        self.limits = environment.policy.limits
        self.decoder = Self.makeDecoder(limits)
    }

    private static func makeDecoder(_ limits: PolicyConfiguration.Limits) -> RequestDecoder {
        RequestDecoder(limits: .init(maxHeaderBytes: limits.maxHeaderBytes, maxHeaders: limits.maxHeaders))
    }

    /// The rules in force for an exchange starting now: kept from the last exchange unless a
    /// reload changed the policy since.
    func exchangeRules() -> ExchangeRules {
        if let rules, rules.generation == environment.policy.generation { return rules }
        let fresh = ExchangeRules(environment)
        rules = fresh
        return fresh
    }

    /// The policy's route for a request to `url`: the last request's when it was to the same
    /// host and port and still holds (``KeptRoute``).
    func route(for url: HTTPURL) -> ProxyRoute {
        let generation = environment.policy.generation
        let port = url.effectivePort
        if let keptRoute, keptRoute.answers(host: url.host, port: port, generation: generation) {
            return keptRoute.route
        }
        let route = environment.policy.proxyRoute(for: url)
        keptRoute = route.holds == nil ? nil : KeptRoute(generation: generation, host: url.host, port: port, route: route)
        return route
    }

    /// `CanonicalHost.parse(text)`, remembered for the next request of this connection.
    func canonicalHost(_ text: String) throws(CanonicalHost.Invalid) -> CanonicalHost {
        try canonicalHostAnswer.value(for: text) { () throws(CanonicalHost.Invalid) in try CanonicalHost.parse(text) }
    }

    // MARK: lifecycle

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        channelIsActive = context.channel.isActive
        let remote = context.channel.remoteAddress
        clientAddress = remote?.ipAddress ?? "-"
        let access = environment.policy.access
        let addressBytes = remote?.networkBytes
        clientAllowed = addressBytes.map { access.allowsClient(address: $0) } ?? false
        clientIsLoopback = addressBytes.map(CIDR.isLoopback) ?? false
        clientTrustedForwarder = addressBytes.map { access.trustsForwarding(address: $0) } ?? false
        if channelIsActive { updateTimers() }
    }

    func channelActive(context: ChannelHandlerContext) {
        channelIsActive = true
        updateTimers()
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        cancelTimers()
        channelIsActive = false
        self.context = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        closing = true
        channelIsActive = false
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
            quiescing = true
            if request == nil, relay == nil { closeNow() }
            return
        }
        if event is TLSHandshakeCompleted, intercepted != nil {
            intercepted?.handshakeDone = true
            return
        }
        if case ChannelEvent.inputClosed = event {
            clientInputClosed = true
            relay?.clientInputClosed()
            if relay == nil, request == nil { closeNow() }
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
        guard !closing else { return }
        decoder.feed(bytes)
        if request != nil, !requestEnded { bodyDeadline = nil }
        processEvents()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        exchange?.clientWritabilityChanged(context.channel.isWritable)
        context.fireChannelWritabilityChanged()
    }

    /// Turns decoded bytes into requests, one exchange at a time.
    private func processEvents() {
        guard !processing else { return }
        processing = true
        defer { processing = false }
        while !closing, relay == nil, !(request != nil && requestEnded), let event = decoder.next() {
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

    private func handle(_ event: RequestDecoder.Event) {
        switch event {
        case .head(let head):
            request = head
            requestEnded = false
            responseDone = false
            closeAfterResponse = false
            stopRequestTimers()
            if head.isConnect || head.isUpgrade {
                // The tunnel or the new protocol needs the client's half-close (EOF) as an event.
                context?.channel.setOption(.allowRemoteHalfClosure, value: true).whenComplete { _ in }
            }
            startExchange(for: head)
        case .body(let buffer):
            if !responseDone { exchange?.clientBodyReceived(buffer) }
        case .end:
            requestEnded = true
            if responseDone {
                requestCycleEnded()
            } else {
                exchange?.clientRequestEnded()
            }
        case .failure(let error):
            if let exchange, request != nil, !responseDone {
                exchange.clientRequestFailed(error)
            } else {
                answerItself(error.answer, close: true)
            }
            closeAfterResponse = true
        }
    }

    /// Decides who answers a request head: the connection itself (a denied client, a bad target,
    /// missing credentials) or an exchange.
    private func startExchange(for head: ClientRequestHead) {
        guard clientAllowed else {
            answerItself(
                OwnResponse(.clientDenied, "client \(clientAddress) is not allowed to use this proxy (access.clients)"),
                close: true
            )
            return
        }
        let target = RequestTarget.classify(head, mode: environment.mode) { host throws(CanonicalHost.Invalid) in
            try canonicalHost(host)
        }
        if case .refuse(let answer) = target {
            answerItself(answer, close: false)
            return
        }
        // Inside an intercepted tunnel the CONNECT was the authenticated request.
        if case .forward = environment.mode, let authenticator = exchangeRules().authenticator,
            authenticator.isEnabled,
            authenticator.user(for: head.headerFields[.proxyAuthorization]) == nil
        {
            let said =
                head.headerFields.contains(.proxyAuthorization)
                ? "the proxy credentials were not accepted" : "proxy authentication required"
            answerItself(ProxyAuthenticator.challenge(said), close: false)
            return
        }
        switch target {
        case .refuse:
            break
        case .http(let url):
            var head = head
            // Logged as the URL it went to: inside an intercepted tunnel the request line names only a path.
            if case .intercepted = environment.mode { head.target = url.absoluteString }
            let forward = ForwardExchange(head: head, url: url, connection: self)
            exchange = forward
            forward.start()
        case .connect(let host, let port):
            let tunnel = TunnelExchange(head: head, host: host, port: port, connection: self)
            exchange = tunnel
            tunnel.start()
        }
    }

    // MARK: for exchanges: the response

    /// Whether the client connection is still open.
    var isActive: Bool { !closing && channelIsActive }

    /// Whether the client's socket takes more bytes now.
    var isWritable: Bool { context?.channel.isWritable ?? false }

    /// The minor HTTP version the response is written in (the request's).
    var minorVersion: Int { request?.minorVersion ?? 1 }

    /// Whether the connection will close after the current response.
    var willClose: Bool {
        guard let request else { return true }
        // After CONNECT or an upgrade request the decoder reads no further request.
        return closeAfterResponse || quiescing || !request.wantsKeepAlive || request.isConnect || request.isUpgrade
    }

    /// Writes an interim response (100 Continue; 101 before a relay).
    func sendInterim(_ head: HTTPResponseHead) {
        guard let context, isActive else { return }
        var buffer = context.channel.allocator.buffer(capacity: 128)
        ResponseEncoder.head(head, minorVersion: minorVersion, into: &buffer)
        write(buffer, context: context)
        flushSoon()
    }

    /// The `Cache-Status` value for `outcome`: the last response's again when its outcome was the
    /// same (a connection's responses mostly are; the text was built per response).
    func cacheStatus(for outcome: CacheOutcome) -> String {
        cacheStatusAnswer.value(for: outcome) { outcome.cacheStatus() }
    }

    /// An empty list for the fields the proxy adds to a response (``sendHead``), in the storage
    /// of the last response's: a list per response was an allocation per response.
    func takeAddedFields() -> HeaderFields {
        var fields = HeaderFields()
        swap(&fields, &spareAddedFields)
        fields.removeAll(keepingCapacity: true)
        return fields
    }

    /// The lines the proxy adds to a request it forwards (Via, and X-Forwarded-* on a reverse
    /// listener): `make`'s, remembered for the connection's next request, since they depend only
    /// on the client's address (fixed), the HTTP version and the Host the client sent (the same
    /// on a kept-alive connection, as a rule).
    func forwardingLines(minorVersion: Int, originalHost: String?, make: () -> HeaderFields) -> HeaderFields {
        forwardingLinesAnswer.value(for: ForwardingLinesKey(minorVersion: minorVersion, originalHost: originalHost), make: make)
    }

    /// Writes a response head; the body follows with ``sendBody(_:)`` and ends with ``sendEnd()``.
    /// `added` are fields the proxy adds, written after the head's own (the connection's own
    /// `Connection` field joins them; best from ``takeAddedFields()``, whose storage is kept for
    /// the next response). `bodyLength`, the Content-Length of a `.contentLength` body, sizes the
    /// buffer for a small body copied in behind the head. `close` asks for the connection to
    /// close after this response.
    func sendHead(
        _ head: HTTPResponseHead,
        adding added: inout HeaderFields,
        omitting omission: HopByHopHeaders.Omission? = nil,
        framing: ResponseFraming,
        bodyLength: Int64?,
        close: Bool
    ) {
        guard let context, isActive else { return }
        defer { spareAddedFields = added }
        closeAfterResponse = closeAfterResponse || close || framing == .untilClose
        added.remove(.connection)
        if willClose {
            added.add(name: .connection, value: "close")
        } else if minorVersion == 0 {
            added.add(name: .connection, value: "keep-alive")
        }
        self.framing = framing
        // Room for a small body too: it is copied in behind the head (``sendBody``), and growing
        // the buffer then would allocate and copy again.
        var capacity = 512
        if framing == .contentLength, let length = bodyLength, length <= Self.coalescedBodyLimit {
            capacity += Int(length)
        }
        var buffer = responseBuffer(capacity: capacity, context: context)
        // The connection's own Connection field replaces the message's (an omission always
        // leaves out `Connection`, which is among the fixed hop-by-hop names). The head is
        // copied only to take one out.
        if omission == nil, head.headerFields.contains(.connection) {
            var head = head
            head.headerFields.remove(.connection)
            ResponseEncoder.head(head, adding: added, omitting: nil, minorVersion: minorVersion, into: &buffer)
        } else {
            ResponseEncoder.head(head, adding: added, omitting: omission, minorVersion: minorVersion, into: &buffer)
        }
        // A body of known length follows, and every piece of it is flushed (``sendBody``,
        // ``sendFile``, ``sendEnd``): the head leaves with the first, without a task on the loop's
        // queue to flush it. Heads of bodies of unknown length (a stream may pause before its
        // first byte) and of no body go out at the end of this tick.
        if framing == .contentLength {
            heldHead = buffer
        } else {
            write(buffer, context: context)
            keepForReuse(buffer)
            flushSoon()
        }
    }

    /// Bodies up to this size are copied behind a held head rather than written on their own.
    private static let coalescedBodyLimit = 16 * 1024
    /// Response buffers up to this capacity are kept for the next response.
    private static let spareBufferLimit = 8 * 1024

    /// A buffer for a response head: the last one's again when the socket has taken all of it
    /// (NIO then holds no reference, and clearing it keeps its storage), so a kept-alive
    /// connection does not allocate one per response; otherwise a new one.
    private func responseBuffer(capacity: Int, context: ChannelHandlerContext) -> ByteBuffer {
        guard var buffer = spareResponseBuffer else { return context.channel.allocator.buffer(capacity: capacity) }
        spareResponseBuffer = nil  // so that `buffer` is the only reference when NIO let go
        buffer.clear(minimumCapacity: capacity)
        return buffer
    }

    /// Keeps a response buffer just handed to NIO for ``responseBuffer(capacity:context:)``.
    private func keepForReuse(_ buffer: ByteBuffer) {
        if buffer.capacity <= Self.spareBufferLimit { spareResponseBuffer = buffer }
    }

    /// Writes `buffer` without flushing it.
    private func write(_ buffer: ByteBuffer, context: ChannelHandlerContext) {
        context.write(wrapOutboundOut(buffer), promise: nil)
        unflushed = true
    }

    /// Writes the held head, if any, ahead of whatever is written next.
    private func releaseHeldHead(context: ChannelHandlerContext) {
        guard let head = heldHead else { return }
        heldHead = nil
        write(head, context: context)
        keepForReuse(head)
    }

    /// Writes a piece of the response body. Body bytes are flushed at once: the client's socket
    /// then reports how far behind it is, which is what suspends the task (back-pressure).
    func sendBody(_ piece: ByteBuffer) {
        guard let context, isActive, piece.readableBytes > 0 else { return }
        switch framing {
        case .none:
            return
        case .chunked:
            var header = context.channel.allocator.buffer(capacity: 16)
            ResponseEncoder.chunkHeader(piece.readableBytes, into: &header)
            context.write(wrapOutboundOut(header), promise: nil)
            context.write(wrapOutboundOut(piece), promise: nil)
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(staticString: "\r\n")), promise: nil)
            unflushed = false
        case .contentLength, .untilClose:
            if var head = heldHead, piece.readableBytes <= Self.coalescedBodyLimit {
                heldHead = nil
                head.writeImmutableBuffer(piece)
                context.writeAndFlush(wrapOutboundOut(head), promise: nil)
                keepForReuse(head)
            } else {
                releaseHeldHead(context: context)
                context.writeAndFlush(wrapOutboundOut(piece), promise: nil)
            }
            unflushed = false
        }
    }

    /// Whether the current response's body may go out as a file region (`sendfile`): its length
    /// frames it, and the connection is plain TCP (not the TLS of an intercepted tunnel, which a
    /// file region cannot pass through).
    var acceptsFileRegion: Bool {
        isActive && framing == .contentLength && intercepted == nil
    }

    /// Writes a body piece that is a region of a file (a stored response's body) with `sendfile`;
    /// the future completes when the kernel took all of it (nil: the connection is gone). Only
    /// when ``acceptsFileRegion``.
    func sendFile(_ region: FileRegion) -> EventLoopFuture<Void>? {
        guard let context, acceptsFileRegion else { return nil }
        releaseHeldHead(context: context)
        unflushed = false
        return context.writeAndFlush(NIOAny(IOData.fileRegion(region)))
    }

    /// Ends the response; the connection then serves the next request or closes.
    func sendEnd() {
        guard let context, isActive else { return }
        releaseHeldHead(context: context)
        if framing == .chunked {
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(staticString: "0\r\n\r\n")), promise: nil)
        } else if unflushed {
            // Bodies of known length were flushed piece by piece: no empty flush through the pipeline.
            context.flush()
        }
        unflushed = false
        responseEnded()
    }

    /// Writes a whole response of the proxy's own and ends the exchange.
    func sendOwnAnswer(_ answer: OwnResponse, close: Bool) {
        guard let context, isActive else { return }
        closeAfterResponse = closeAfterResponse || close
        let hasUnreadBody = !requestEnded && (request?.hasBody ?? false)
        let head = answer.head(minorVersion: minorVersion, close: willClose || hasUnreadBody)
        var buffer = context.channel.allocator.buffer(capacity: 256)
        ResponseEncoder.head(head, minorVersion: minorVersion, into: &buffer)
        var body = answer.body
        buffer.writeBuffer(&body)
        heldHead = nil  // a response that began is never followed by an answer of the proxy's own
        write(buffer, context: context)
        flushSoon()
        framing = .none
        responseEnded()
    }

    /// Answers the current request (or, with none, the bytes that could not be one) without an
    /// exchange, and logs it.
    private func answerItself(_ answer: OwnResponse, close: Bool) {
        let entry = AccessLogEntry(
            clientAddress: clientAddress,
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

    /// Flushes once the current event-loop tick is over, so that a response head and the first
    /// body piece that came with it from the upstream leave in one write. While the client's
    /// bytes are being handled, ``processEvents()`` flushes when it is done.
    private func flushSoon() {
        guard !flushScheduled, let context else { return }
        flushScheduled = true
        if processing { return }
        context.eventLoop.execute { [self] in
            flushScheduled = false
            self.context?.flush()
            unflushed = false
        }
    }

    /// Closes the connection at once: a response that cannot be completed must not look complete.
    func abort() {
        closing = true
        responseDone = true
        // What was relayed so far goes out first: the client sees the response cut short.
        if let context { releaseHeldHead(context: context) }
        context?.flush()
        context?.close(promise: nil)
    }

    /// The response ended: go on with the next request, or close.
    private func responseEnded() {
        responseDone = true
        exchange = nil
        let unreadBody = !requestEnded && (request?.hasBody ?? false)
        if willClose || unreadBody {
            closeAfterFlush()
            return
        }
        if requestEnded { requestCycleEnded() }
    }

    /// Request and response are both complete: wait for the next request.
    private func requestCycleEnded() {
        request = nil
        requestEnded = false
        responseDone = false
        exchange = nil
        if clientInputClosed, decoder.bufferedBytes == 0 {
            closeAfterFlush()
            return
        }
        if processing { return }  // the loop in processEvents goes on
        // Not inside processEvents: an exchange's callback ended the response. A next request
        // already received is started from the event loop, after that callback has returned; with
        // none, reading and the idle timer resume now (nothing can start inside the callback).
        guard decoder.bufferedBytes == 0 else {
            context?.eventLoop.execute { [self] in
                if !closing { processEvents() }
            }
            return
        }
        processEvents()
    }

    private func closeAfterFlush() {
        guard let context, !closing else { return }
        closing = true
        cancelTimers()
        releaseHeldHead(context: context)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(ByteBuffer())).whenComplete { _ in channel.close(promise: nil) }
    }

    private func closeNow() {
        closing = true
        cancelTimers()
        context?.close(promise: nil)
    }

    // MARK: for exchanges: the request body and reads

    /// Holds reads from the client until the session has taken this request body piece.
    func trackBodyPiece(_ taken: EventLoopFuture<Void>) {
        guard let context else { return }
        piecesInFlight += 1
        bodyDeadline = nil
        taken.hop(to: context.eventLoop).assumeIsolated().whenComplete { [self] _ in
            piecesInFlight -= 1
            updateTimers()
            resumeReadingIfPossible()
        }
    }

    /// Stops reading from the client until ``releaseReads()`` (an exchange deciding where to go).
    func holdReads() {
        readHolds += 1
        updateTimers()
    }

    /// Undoes one ``holdReads()``.
    func releaseReads() {
        readHolds -= 1
        updateTimers()
        resumeReadingIfPossible()
    }

    func read(context: ChannelHandlerContext) {
        if mayRead {
            context.read()
        } else {
            readPending = true
        }
    }

    private var mayRead: Bool {
        if closing { return false }
        if let relay { return relay.wantsClientBytes }
        if piecesInFlight > 0 || readHolds > 0 || decoder.isStopped { return false }
        return decoder.bufferedBytes < Self.readAheadLimit
    }

    func resumeReadingIfPossible() {
        guard readPending, mayRead, let context else { return }
        readPending = false
        context.read()
    }

    // MARK: for exchanges: tunnels

    /// Hands the connection to a relay: from now on the client's bytes go to it raw (starting with
    /// those that arrived after the request head).
    func startRelay(_ relay: StreamRelay) {
        guard isActive else {
            relay.clientClosed()
            return
        }
        exchange = nil
        responseDone = true
        self.relay = relay
        cancelTimers()
        relay.start(initialClientBytes: decoder.takeRawBytes(), clientInputClosed: clientInputClosed)
        resumeReadingIfPossible()
    }

    /// Writes relayed bytes to the client; the future completes when the kernel took them (nil:
    /// the connection is gone).
    func writeRaw(_ bytes: ByteBuffer) -> EventLoopFuture<Void>? {
        guard let context, !closing else { return nil }
        return context.writeAndFlush(wrapOutboundOut(bytes))
    }

    /// Sends EOF to the client (the upstream half-closed a tunnel).
    func closeOutput() {
        context?.close(mode: .output, promise: nil)
    }

    /// Closes the connection (a relay ended).
    func close() {
        closeNow()
    }

    // MARK: for exchanges: interception

    /// Answers the current CONNECT with 200 and continues as an intercepted connection: TLS with
    /// the client under `context` (a leaf minted for the host), then requests to `origin` read
    /// from inside it. Bytes the client sent after the CONNECT head are its first TLS bytes.
    func beginInterception(of origin: HTTPURL, context tlsContext: TLSContext) {
        guard let context, isActive else { return }
        // Out in plaintext before the TLS handler goes in front.
        sendInterim(HTTPResponseHead(status: 200, reason: "Connection Established"))
        context.flush()
        let early = decoder.takeRawBytes()
        decoder = Self.makeDecoder(limits)
        environment.mode = .intercepted(origin: origin)
        intercepted = (host: origin.host, handshakeDone: false)
        request = nil
        requestEnded = false
        responseDone = false
        exchange = nil
        closeAfterResponse = false
        framing = .none
        do {
            try context.pipeline.syncOperations.addTLSServerHandler(context: tlsContext)
        } catch {
            standardErrorLine("tollgate: interception of \(origin.authority) failed: \(error)")
            closeNow()
            return
        }
        if early.readableBytes > 0 { context.pipeline.syncOperations.fireChannelRead(NIOAny(early)) }
        updateTimers()
        resumeReadingIfPossible()
    }

    /// The client ended the TLS handshake of an intercepted CONNECT. An alert from it means it
    /// refused the minted certificate (it does not trust the CA, or pins the real key): the host
    /// is tunnelled untouched from now on, and this is logged once.
    private func interceptedHandshakeFailed(host: String, _ error: TLSError) {
        guard error == .alertReceived, let interceptor = environment.interceptor else { return }
        let alert = error.alert ?? "an alert"
        if interceptor.rememberRefusal(of: host, reason: alert) {
            Interceptor.logger.notice(
                "the client \(clientAddress) refused the certificate minted for \(host) (\(alert)); CONNECTs to \(host) are tunnelled untouched from now on",
                metadata: ["host": "\(host)", "client": "\(clientAddress)", "alert": "\(alert)"]
            )
        }
    }

    // MARK: timeouts

    private func updateTimers() {
        guard let context, !closing, relay == nil, channelIsActive else {
            cancelTimers()
            return
        }
        if request == nil {
            bodyDeadline = nil
            if decoder.isInsideHead {
                idleDeadline = nil
                if headDeadline == nil { headDeadline = TickClock.now + TimeAmount(limits.headerReadTimeout) }
            } else if headDeadline == nil, idleDeadline == nil {
                // Idle since now: closed at the deadline unless a request comes first.
                idleDeadline = TickClock.now + TimeAmount(limits.clientIdleTimeout)
            }
        } else {
            idleDeadline = nil
            headDeadline = nil
            let waitingForBody = !requestEnded && piecesInFlight == 0 && readHolds == 0 && !responseDone
            if !waitingForBody {
                bodyDeadline = nil
            } else if bodyDeadline == nil {
                bodyDeadline = TickClock.now + TimeAmount(limits.clientIdleTimeout)
            }
        }
        watchDeadlines(on: context.eventLoop)
    }

    /// Registers the earliest deadline with the loop (a later one than registered changes nothing).
    private func watchDeadlines(on eventLoop: any EventLoop) {
        var earliest = idleDeadline
        if let head = headDeadline, earliest.map({ head < $0 }) ?? true { earliest = head }
        if let body = bodyDeadline, earliest.map({ body < $0 }) ?? true { earliest = body }
        if let earliest { LoopDeadlines.of(eventLoop).watch(self, until: earliest) }
    }

    /// A registered deadline passed: answer or close for the ones that really did, watch the rest.
    package func deadlinePassed() {
        guard let context, !closing else { return }
        let now = TickClock.now
        if let deadline = headDeadline, deadline <= now {
            headDeadline = nil
            if request == nil {
                let timeout = limits.headerReadTimeout
                answerItself(
                    ClientRequestError.timedOut("the request head did not arrive within \(timeout)").answer,
                    close: true
                )
                return
            }
        }
        if let deadline = bodyDeadline, deadline <= now {
            bodyDeadline = nil
            if request != nil, !requestEnded {
                handle(.failure(.timedOut("no request body bytes for \(limits.clientIdleTimeout)")))
                return
            }
        }
        if let deadline = idleDeadline, deadline <= now {
            idleDeadline = nil
            if request == nil, !decoder.isInsideHead {
                closeNow()
                return
            }
        }
        watchDeadlines(on: context.eventLoop)
    }

    /// A request head arrived: the head and body timeouts stop; so does the idle one.
    private func stopRequestTimers() {
        idleDeadline = nil
        headDeadline = nil
        bodyDeadline = nil
    }

    private func cancelTimers() {
        stopRequestTimers()
        // Off the loop's list at once: a closed connection is not kept until its old deadline.
        if deadlineSlot.isWatched, let loop = context?.eventLoop { LoopDeadlines.of(loop).unwatch(self) }
    }
}
