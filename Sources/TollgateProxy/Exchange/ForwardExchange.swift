import Foundation
import NIOCore
import TollgateCache
import TollgateHTTP
import TollgateLoop
import TollgatePolicy
import TollgateSession

/// One HTTP request of a client (forward or reverse listener), carried out by a session task
/// whose delegate it is, and the response written back to the client.
///
/// Before the task exists: the host rule (`isDenied`) and the destination rules are checked on
/// the resolved address (``DestinationCheck``); body bytes that arrive meanwhile are held, and
/// reads from the client stop until the session takes the body.
///
/// The task delegate implements only what the exchange itself must decide — the response, its
/// body, the request body stream, the end — so redirects, caching and credentials fall through
/// to the route's session delegate (the policy).
///
/// The task runs on the client channel's event loop, so its delegate messages and the channel's
/// events arrive on the same thread: all state here is touched only on ``eventLoop`` (hence
/// `@unchecked Sendable`, which `TaskDelegate` requires).
final class ForwardExchange: StoredFileReceiving, BodyEndReceiving, ImmediateResponseDeciding, ClientExchange, DeadlineWatcher,
    @unchecked Sendable
{
    let head: ClientRequestHead
    /// The URL loaded (canonical host; for a reverse listener, on the upstream); the mapped one
    /// when a rule's `map-remote` sends the request elsewhere (``admitted(_:url:responder:context:)``).
    let url: HTTPURL
    /// Where ``url`` goes: its host rule's session and decisions.
    let route: ProxyRoute
    let eventLoop: any EventLoop
    let environment: ListenerEnvironment
    /// The rules in force when the exchange started (timeout, destinations).
    let rules: ExchangeRules

    /// The connection's memo (routes, hosts, forwarding lines, the client's address).
    let memo: ConnectionMemo

    /// What the response goes out through; nil once the exchange is finished.
    var connection: (any ClientResponder)?
    var record: ExchangeRecord
    var task: DataTask?
    var bodyStream: BodyStream?
    var bodyStreamGiven = false
    /// Body pieces that arrived before the session asked for the body.
    var heldBody: [ByteBuffer] = []
    /// The client's body so far, kept to be sent again (a followed 307, an answered 401, a
    /// refused stream); made with its first piece.
    var keptBody: RequestBodySpool?
    /// A body kept in a file is being given to a new stream: pieces arriving meanwhile are kept
    /// and follow from the file, not straight to the stream.
    var replayingBody = false
    var holdingReads = false
    var requestEnded = false
    /// Body pieces handed to the session and not yet taken.
    var piecesWaiting = 0
    var responseStarted = false
    var becameStream = false
    /// The answer to give instead of the task's error (set when the exchange itself cancels it).
    var ownAnswer: OwnResponse?
    var closeAfterResponse = false
    var suspendedForClient = false
    var isFinished = false
    /// The response's end was written to the client while the task still stores it: the exchange
    /// waits only for the task's completion, to log what was stored (``dataTaskDidReceiveWholeBody(_:)``).
    var bodyDelivered = false
    /// When the response's end was written, when that came before the exchange finished.
    var clientEnded: Date?
    /// The upstream timeout's place in the loop's deadline list.
    package var deadlineSlot = DeadlineSlot()
    /// Inside `task.resume()` in ``startTask(on:)`` (the upstream timer is armed after it).
    var startingTask = false
    /// A stored body is being written to the client as a file region: the proxy waits for the
    /// client then, not for the upstream, so the upstream timeout does not run.
    var sendingStoredFile = false
    /// Set by ``noteUpstreamProgress()`` before the deadline is first watched (no clock read
    /// for an exchange that never waits, such as a cache hit).
    var lastUpstreamProgress = NIODeadline.uptimeNanoseconds(0)
    /// The task was routed again after its first session turned out invalidated.
    var rerouted = false
    /// Offline with a manifest: the entry the request is served from, and the check of its body.
    var manifestEntry: CacheManifest.Entry?
    /// The manifest's entry was taken by what the request accepts, not by its own values: the
    /// lookup goes by the entry's (``selectManifestVariant(in:)``).
    var manifestNegotiated = false
    var manifestCheck: ManifestBodyCheck?
    /// The response goes out compressed (`hosts[].compress`, Brotli or gzip): its body passes through this.
    var bodyEncoder: (any ResponseBodyEncoder)?
    /// A rule's `map-remote` sent the request elsewhere: the response's references are written
    /// back for the client's URL (``ClientFacingReferences``).
    var mappedReferences: ClientFacingReferences?
    /// A `map-local` file being sent (``pumpMappedFile()``).
    var mappedFile: MappedFile?

    init(head: ClientRequestHead, url: HTTPURL, route: ProxyRoute, responder: any ClientResponder, context: ExchangeContext) {
        self.head = head
        self.url = url
        self.route = route
        self.connection = responder
        self.environment = context.environment
        self.eventLoop = context.eventLoop
        self.rules = context.rules
        self.memo = context.memo
        self.record = ExchangeRecord(head: head, clientAddress: context.memo.clientAddress, clientTLS: context.memo.clientTLS)
        context.environment.exchangesInFlight.begin()
        // The decoder stops after an upgrade request: no request can follow one that is refused.
        self.closeAfterResponse = head.isUpgrade
    }

    // MARK: the request

    /// Routes the request, checks its destination, and creates and resumes the task.
    func start() {
        if environment.ownListeners.hasForwarded(head.headerFields) {
            respond(Self.loopDetected(environment.ownListeners.loopIdentifier))
            return
        }
        if let mayPurge = memo.clientMayPurge, head.method == "PURGE" {
            servePurge(allowed: mayPurge)
            return
        }
        if head.hasBody, head.method == "GET" || head.method == "HEAD" {
            // RFC 9110 §9.3.1: a body on a GET has no defined meaning, and a cache keys a GET by its
            // URL alone: forwarded, the body could change what the origin answers, and that answer
            // would be stored for everyone asking the plain URL. Refused, and the connection closed
            // (the body is not read).
            closeAfterResponse = true
            respond(
                OwnResponse(
                    .badRequest,
                    "a \(head.method) request with a body is refused: its answer could not be cached safely "
                        + "(send the body with POST)"
                )
            )
            return
        }
        record.route = route
        if route.isDenied {
            respond(OwnResponse(.hostDenied, "\(url.authority) is denied by the rule \(route.ruleLabel)"))
            return
        }
        if let mappings = route.mapLocal, head.method == "GET" || head.method == "HEAD",
            let match = mappings.lazy.compactMap({ $0.match(self.url.path) }).first
        {
            // Answered here, online or offline: the origin is not asked.
            serveMapped(match)
            return
        }
        if rules.offline {
            startOffline(on: route)
            return
        }
        if head.hasBody {
            holdingReads = true
            connection?.holdReads()
        }
        guard let host = canonicalHost() else { return }
        if route.connectsElsewhere {
            // The name's own addresses are not where the task connects: the session checks each
            // `connect-to` target's (``SessionConfiguration/connectionAddressCheck``).
            startTask(on: route)
            return
        }
        // An address is decided now, without a closure for later (`check(_:port:on:then:)` takes one
        // even when it answers at once): a reverse listener's upstream is usually an address.
        if let verdict = rules.destinations.verdictWithoutLookup(for: host, port: url.effectivePort) {
            proceed(after: verdict, on: route)
            return
        }
        rules.destinations.check(host, port: url.effectivePort, on: eventLoop).whenSuccess { [self] verdict in
            proceed(after: verdict, on: route)
        }
    }

    /// The answer to a request that came round to this proxy again.
    static func loopDetected(_ identifier: String) -> OwnResponse {
        OwnResponse(
            .forwardingLoop,
            "a forwarding loop: this request has passed this proxy before (CDN-Loop: \(identifier)); check the "
                + "upstream-proxy of the sessions and the upstreams of reverse listeners on the way"
        )
    }

    /// The URL's host in canonical form; nil when it is not a valid host (answered 400).
    func canonicalHost() -> CanonicalHost? {
        do throws(CanonicalHost.Invalid) {
            return try memo.canonicalHost(url.host)
        } catch {
            respond(OwnResponse(.badRequest, error.description))
            return nil
        }
    }

    private func proceed(after verdict: DestinationCheck.Verdict, on route: ProxyRoute) {
        guard !isFinished else { return }
        switch verdict {
        case .allowed:
            startTask(on: route)
        case .denied(let why):
            respond(OwnResponse(.hostDenied, why))
        case .unresolvable:
            // Nothing to connect to, so nothing to refuse by address: the task still runs, so a
            // build working offline is answered from the cache; without a stored response the
            // session fails to resolve the name too (502 upstream-unreachable).
            startTask(on: route)
        }
    }

    /// Creates and resumes the task; `cachePolicy` overrides the session's (offline).
    func startTask(on route: ProxyRoute, cachePolicy: RequestCachePolicy? = nil) {
        guard let connection else { return }
        var request = Request(
            method: TollgateHTTP.HTTPMethod(head.method),
            url: url,
            headerFields: forwardedHeaderFields(),
            cachePolicy: cachePolicy
        )
        if manifestNegotiated { selectManifestVariant(in: &request.headerFields) }
        // The rule's `request-headers`, before the cache looks the request up: a stored variant is
        // chosen by what the origin is sent.
        route.requestHeaders?.apply(to: &request.headerFields)
        do {
            let task: DataTask
            if head.hasBody {
                task = try route.session.uploadTask(withStreamedRequest: request, on: eventLoop)
                bodyStream = BodyStream()
            } else {
                task = try route.session.dataTask(with: request, on: eventLoop)
            }
            self.task = task
            task.delegate = self
            if head.expectsContinue, head.hasBody, head.minorVersion >= 1, !requestEnded {
                // The session does not relay interim responses, so the proxy answers the
                // expectation itself, now that the request is going upstream.
                connection.sendInterim(HTTPResponseHead(status: 100))
            }
            // A task answered at once (a cache hit) completes inside resume(): the upstream
            // timer is armed only after it, when the task still waits.
            startingTask = true
            task.resume()
            startingTask = false
            noteUpstreamProgress()
            if !isFinished, !connection.isWritable { clientWritabilityChanged(false) }
        } catch  where error.code == .sessionInvalidated && !rerouted {
            // A reload retired the session between routing and now: route again, once.
            rerouted = true
            let fresh = environment.policy.proxyRoute(for: url)
            record.route = fresh
            if fresh.isDenied {
                respond(OwnResponse(.hostDenied, "\(url.authority) is denied by the rule \(fresh.ruleLabel)"))
            } else {
                bodyStream = nil
                startTask(on: fresh, cachePolicy: cachePolicy)
            }
        } catch {
            respond(OwnResponse(for: error))
        }
    }

    /// The fields a reverse listener adds about the client, unless a trusted forwarder sent them.
    private static let forwardedFields = HeaderNameList([.xForwardedFor, .xForwardedHost, .xForwardedProto])
    /// Every field that tells an origin how a request reached it.
    private static let forwardingFields = HeaderNameList([
        .xForwardedFor, .xForwardedHost, .xForwardedProto, .xForwardedPort, .forwarded,
    ])
    /// The RFC 9440 fields: which certificate the client's TLS connection verified.
    private static let clientCertificateFields = HeaderNameList([.clientCert, .clientCertChain])

    /// The client's header fields as they go upstream: hop-by-hop fields removed (credentials
    /// for the proxy among them), Host left to the session (it derives it from the URL, as
    /// RFC 9112 §3.2.2 asks of a proxy, and for a reverse listener that is the upstream's),
    /// Via added; an upgrade keeps its `Connection: Upgrade` and `Upgrade`.
    func forwardedHeaderFields() -> HeaderFields {
        let upgrades = head.isUpgrade ? head.headerFields.values(for: .upgrade) : []
        var fields = HopByHopHeaders.removing(from: head.headerFields)
        fields.reserveCapacity(fields.count + 5)  // Via, CDN-Loop and the X-Forwarded-* fields: one copy, not two
        let originalHost = fields.take(.host)
        if head.expectsContinue { fields.remove(.expect) }
        if head.framing == .chunked { fields.remove(.contentLength) }
        if !upgrades.isEmpty {
            fields.add(name: .connection, value: "Upgrade")
            for value in upgrades { fields.add(name: .upgrade, value: value) }
        }
        let reverse = if case .reverse = environment.mode { true } else { false }
        if fields.containsAny(of: Self.forwardingFields), !memo.clientTrustedForwarder {
            // A client's own claims about the request's way here (its host, scheme, port) reach an
            // origin that may build URLs from them into a response this cache stores for everyone:
            // only a trusted forwarder's are kept (`access.trusted-forwarders`). A forward proxy
            // passes X-Forwarded-For on as Squid does; a reverse one states the client itself.
            for name in [HeaderName.forwarded, .xForwardedHost, .xForwardedProto, .xForwardedPort] { fields.remove(name) }
            if reverse { fields.remove(.xForwardedFor) }
        }
        // RFC 9440 §4: a client's own `Client-Cert` is a claim to an identity it did not prove.
        // A reverse listener removes it (a trusted forwarder's stands, unless this connection
        // verified a certificate of its own, which replaces it); a forward one passes it on, as
        // X-Forwarded-For, unless it forwards the certificate it verified.
        let certificate = memo.clientTLS?.forwardedCertificate
        if certificate != nil || (reverse && !memo.clientTrustedForwarder),
            fields.containsAny(of: Self.clientCertificateFields)
        {
            fields.remove(.clientCert)
            fields.remove(.clientCertChain)
        }
        // Usually the client sent none of the X-Forwarded-* fields (the key mask says so without
        // a walk): the proxy's lines are then the same as for the connection's last request.
        if !reverse || !fields.containsAny(of: Self.forwardedFields) {
            let client = memo.clientAddress
            let via = Self.via(head)
            let host = reverse ? originalHost : nil
            // The connection's TLS is fixed for its life, so the remembered lines stay right.
            let secure = memo.clientTLS != nil
            let scheme = secure ? "https" : "http"
            let loop = environment.ownListeners.loopIdentifier
            // The host is made canonical only when the lines are made: the memo's key is the
            // client's own spelling, which is the same from request to request.
            let make = {
                Self.addedLines(
                    via: via, loop: loop, client: client, originalHost: host.map { Self.forwardedHost($0, secure: secure) }, reverse: reverse,
                    scheme: scheme, certificate: certificate
                )
            }
            // (A connection's requests are all HTTP/2 or all HTTP/1.x: the memo's key needs no more.)
            fields.append(contentsOf: memo.forwardingLines(minorVersion: head.minorVersion, originalHost: host, make: make))
            return fields
        }
        fields.add(name: .via, value: Self.via(head))
        fields.add(name: .cdnLoop, value: environment.ownListeners.loopIdentifier)
        let client = memo.clientAddress
        if let earlier = fields[.xForwardedFor] {
            fields[.xForwardedFor] = earlier + ", " + client
        } else {
            fields.add(name: .xForwardedFor, value: client)
        }
        if let originalHost, !fields.contains(.xForwardedHost) {
            fields.add(name: .xForwardedHost, value: Self.forwardedHost(originalHost, secure: memo.clientTLS != nil))
        }
        if !fields.contains(.xForwardedProto) { fields.add(name: .xForwardedProto, value: memo.clientTLS == nil ? "http" : "https") }
        if let certificate { Self.add(certificate, to: &fields) }
        return fields
    }

    /// `Client-Cert` and, when the client presented more than its leaf, `Client-Cert-Chain`.
    private static func add(_ certificate: ClientCertificate, to fields: inout HeaderFields) {
        fields.add(name: .clientCert, value: certificate.field)
        if let chain = certificate.chainField { fields.add(name: .clientCertChain, value: chain) }
    }

    /// The client's `Host` as a reverse listener tells the origin (`X-Forwarded-Host`): in lower
    /// case, without the listener scheme's default port (`secure`: 443, else 80). Stored answers
    /// vary on the field (``VaryMatching/alwaysVaried``), so `Shop.example`, `shop.example:80` and
    /// `shop.example` — one site — share one variant instead of filling three.
    static func forwardedHost(_ host: String, secure: Bool) -> String {
        // On the bytes: `lowercased()` and `hasSuffix` cost ~800 instructions a connection.
        var host = host
        let canonical = host.withUTF8 { bytes -> String? in
            let port: StaticString = secure ? ":443" : ":80"
            var end = bytes.count
            let portBytes = UnsafeRawBufferPointer(start: port.utf8Start, count: port.utf8CodeUnitCount)
            if end > portBytes.count, UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[(end - portBytes.count)...]).elementsEqual(portBytes) {
                end -= portBytes.count
            }
            let upper = bytes[..<end].contains { $0 >= 0x41 && $0 <= 0x5A }
            guard upper || end < bytes.count else { return nil }
            return String(unsafeUninitializedCapacity: end) { out in
                for index in 0..<end {
                    let byte = bytes[index]
                    out[index] = byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
                }
                return end
            }
        }
        return canonical ?? host
    }

    /// Via's value for `head`: the protocol it was received with (RFC 9110 §7.6.3), `2` for an
    /// HTTP/2 stream, else HTTP/1.`minorVersion`.
    private static func via(_ head: ClientRequestHead) -> String {
        if head.isHTTP2 { return "2 tollgate" }
        return head.minorVersion == 1 ? "1.1 tollgate" : "1.\(head.minorVersion) tollgate"
    }

    /// The lines the proxy adds to a request whose client sent no X-Forwarded-* field: Via, its
    /// `CDN-Loop` member (`loop`), and on a reverse listener X-Forwarded-For, -Host (when the
    /// client sent a Host) and -Proto (`scheme`: `https` over a TLS listener).
    private static func addedLines(
        via: String, loop: String, client: String, originalHost: String?, reverse: Bool, scheme: String,
        certificate: ClientCertificate?
    ) -> HeaderFields {
        var lines = HeaderFields()
        lines.add(name: .via, value: via)
        lines.add(name: .cdnLoop, value: loop)
        // The connection's certificate is fixed for its life, so remembered lines stay right.
        if let certificate { add(certificate, to: &lines) }
        guard reverse else { return lines }
        lines.add(name: .xForwardedFor, value: client)
        if let originalHost { lines.add(name: .xForwardedHost, value: originalHost) }
        lines.add(name: .xForwardedProto, value: scheme)
        return lines
    }

    // MARK: from the client

    func clientBodyReceived(_ buffer: ByteBuffer) {
        guard !isFinished else { return }
        record.requestBodyBytes += Int64(buffer.readableBytes)
        keepForResend(buffer)
        if bodyStreamGiven, let bodyStream {
            if !replayingBody { send(buffer, to: bodyStream) }
        } else {
            heldBody.append(buffer)
        }
    }

    /// Hands a piece to the session's body stream; the future completes when it was taken.
    @discardableResult
    func send(_ piece: ByteBuffer, to stream: BodyStream) -> EventLoopFuture<Void> {
        let taken = stream.write(piece, on: eventLoop)
        connection?.trackBodyPiece(taken)
        piecesWaiting += 1
        noteUpstreamProgress()
        taken.whenComplete { [self] _ in
            piecesWaiting -= 1
            noteUpstreamProgress()
        }
        return taken
    }

    func clientRequestEnded() {
        requestEnded = true
        if bodyStreamGiven, !replayingBody { bodyStream?.finish() }
        noteUpstreamProgress()
    }

    func clientRequestFailed(_ error: ClientRequestError) {
        guard !isFinished else { return }
        closeAfterResponse = true
        if responseStarted {
            task?.cancel()
            finish()?.abort()
        } else if let task {
            ownAnswer = error.answer
            task.cancel()
        } else {
            respond(error.answer)
        }
    }

    func clientClosed() {
        guard !isFinished else { return }
        if let task, task.cacheOutcome?.stored == true, task.state != .completed {
            // The response is being stored: finish fetching it into the cache although its client
            // left (Squid's quick_abort, nginx's proxy_cache_lock): the next client gets a hit, and a
            // body that was complete for this client is not thrown away a moment before its end.
            connection = nil
            if suspendedForClient {
                suspendedForClient = false
                task.resume()
            }
        } else if let task {
            task.cancel()
        } else {
            finish()
        }
    }

    func clientSendTimedOut() {
        guard !isFinished else { return }
        record.errorCode = ProxyErrorCode.clientSendTimeout.rawValue
    }

    /// Back-pressure: a client that does not read suspends the task (nothing more is read from
    /// the upstream); when it reads again the task resumes.
    func clientWritabilityChanged(_ writable: Bool) {
        if writable, mappedFile != nil { mappedFileClientDrained() }
        guard let task, !isFinished else { return }
        if !writable, !suspendedForClient {
            suspendedForClient = true
            task.suspend()
        } else if writable, suspendedForClient {
            suspendedForClient = false
            task.resume()
            noteUpstreamProgress()
        }
    }

    // MARK: the body stream

    func task(
        _ task: SessionTask,
        needNewBodyStream completionHandler: @escaping @Sendable (BodyStreamDecision) -> Void
    ) {
        guard let bodyStream, !bodyStreamGiven else {
            completionHandler(.stream(resendBodyStream()))
            return
        }
        bodyStreamGiven = true
        completionHandler(.stream(bodyStream))
        for piece in heldBody { send(piece, to: bodyStream) }
        heldBody = []
        if requestEnded { bodyStream.finish() }
        if holdingReads {
            holdingReads = false
            connection?.releaseReads()
        }
    }

    func task(
        _ task: SessionTask,
        didSendBodyData bytesSent: Int64,
        totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        noteUpstreamProgress()
    }

    // MARK: the upstream timeout

    /// The upstream made progress (or the proxy started waiting for it): the upstream timeout
    /// counts from now. It runs only while the proxy waits for the upstream: not while the
    /// client is still sending a body the session has taken, nor while the task is suspended
    /// because the client does not read.
    func noteUpstreamProgress() {
        // Inside `resume()` the clock is not read: ``startTask(on:)`` notes progress after it
        // (and a hit finishes the exchange before then).
        guard !isFinished, !startingTask, !bodyDelivered else { return }
        lastUpstreamProgress = TickClock.now
        guard !deadlineSlot.isWatched, task != nil else { return }
        LoopDeadlines.of(eventLoop).watch(self, until: lastUpstreamProgress + TimeAmount(rules.upstreamTimeout))
    }

    private var waitsForUpstream: Bool {
        task != nil && !isFinished && !bodyDelivered && !suspendedForClient && !sendingStoredFile
            && (requestEnded || piecesWaiting > 0 || !head.hasBody)
    }

    /// The upstream timeout's deadline passed: the upstream failed to make progress in time
    /// (the task is cancelled), or it made some since (watch again for the rest).
    package func deadlinePassed() {
        guard let task, !isFinished else { return }
        // Not waiting for the upstream now: the next change that makes the proxy wait again
        // (a body piece handed over, the request's end, a resume) arms the timer anew.
        guard waitsForUpstream else { return }
        let due = lastUpstreamProgress + TimeAmount(rules.upstreamTimeout)
        if due > TickClock.now {
            LoopDeadlines.of(eventLoop).watch(self, until: due)
            return
        }
        if !responseStarted {
            ownAnswer = OwnResponse(
                .upstreamTimeout,
                "\(url.authority) did not answer within \(rules.upstreamTimeout) (limits.upstream-timeout)"
            )
        }
        task.cancel()
    }

    // MARK: ending

    /// Answers with a response of the proxy's own (logged without a status when the client is
    /// already gone: nothing was sent).
    func respond(_ answer: OwnResponse) {
        guard connection?.isActive == true else {
            finish()
            return
        }
        record.status = answer.status
        record.errorCode = answer.code.rawValue
        record.bodyBytes = Int64(answer.body.readableBytes)
        let close = closeAfterResponse
        finish()?.sendOwnAnswer(answer, close: close)
    }

    /// Marks the exchange finished and logs it, before its last write: writing the end may at
    /// once start the client's next request. Returns the connection for that last write.
    @discardableResult
    func finish() -> (any ClientResponder)? {
        guard !isFinished else { return nil }
        isFinished = true
        keptBody?.close()
        if let mappedFile, !mappedFile.reading {
            // (A read or region under way closes it when it returns.)
            mappedFile.close()
            self.mappedFile = nil
        }
        if deadlineSlot.isWatched { LoopDeadlines.of(eventLoop).unwatch(self) }
        if holdingReads {
            holdingReads = false
            connection?.releaseReads()
        }
        let connection = self.connection
        self.connection = nil
        // Measured to the response's end, as nginx's $request_time: not to a commit after it.
        let ended = clientEnded ?? Date()
        environment.accessLog.record(record.entry(ended: ended))
        environment.exchangesInFlight.end()
        let metrics = environment.metrics
        metrics.record(
            outcome: record.cacheOutcome,
            errorCode: record.errorCode,
            seconds: ended.timeIntervalSince(record.started)
        )
        metrics.noteFinished(record, url: url, ended: ended, harEntries: rules.harEntries)
        return connection
    }
}

extension OwnResponse {
    /// The answer for a task that failed with `error` (502, 504, …; 501 for what the session
    /// cannot load, such as a scheme it does not support yet).
    init(for error: SessionError) {
        let code = ProxyErrorCode(for: error)
        self.init(code, status: error.code == .unsupportedURL ? 501 : nil, error.description)
    }
}

extension ForwardExchange {
    /// The exchange of an admitted request for `url` (not started: the caller records it first,
    /// since a start may answer at once). Inside an intercepted tunnel the request line names only
    /// a path, so the head is logged as the URL it went to.
    static func admitted(
        _ head: ClientRequestHead,
        url: HTTPURL,
        responder: any ClientResponder,
        context: ExchangeContext
    ) -> ForwardExchange {
        var head = head
        if case .intercepted = context.environment.mode { head.target = url.absoluteString }
        let route = context.memo.route(for: url, environment: context.environment)
        if let (mapping, mapped) = remoteMapping(of: head, url: url, route: route) {
            // Sent elsewhere: a request for the mapped URL from here on, under that host's rule
            // (its trust, credentials, cache, destinations), whose own mappings are not applied again.
            let mappedRoute = context.memo.route(for: mapped, environment: context.environment)
            let exchange = ForwardExchange(head: head, url: mapped, route: mappedRoute, responder: responder, context: context)
            exchange.mappedReferences = ClientFacingReferences(mapping: mapping, loaded: mapped, client: url)
            return exchange
        }
        return ForwardExchange(head: head, url: url, route: route, responder: responder, context: context)
    }

    /// The URL a rule's `map-remote` sends a request for `url` to, or nil: none of its mappings
    /// is for the path, or the rule answers first (it denies the host, or its `map-local` answers
    /// the path).
    private static func remoteMapping(of head: ClientRequestHead, url: HTTPURL, route: ProxyRoute) -> (HostRule.RemoteMapping, HTTPURL)? {
        guard let mappings = route.mapRemote, !route.isDenied else { return nil }
        if let local = route.mapLocal, head.method == "GET" || head.method == "HEAD", local.contains(where: { $0.match(url.path) != nil }) {
            return nil
        }
        return mappings.lazy.compactMap { mapping in mapping.map(url).map { (mapping, $0) } }.first
    }
}
