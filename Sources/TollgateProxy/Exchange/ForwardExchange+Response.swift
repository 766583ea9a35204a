import Foundation
import NIOCore
import TollgateHTTP
import TollgateLoop
import TollgatePolicy
import TollgateSession

/// The response side of a ``ForwardExchange``: head, body, end, upgrades.
extension ForwardExchange {
    func dataTask(
        _ task: DataTask,
        didReceive response: TollgateHTTP.HTTPResponseHead,
        completionHandler: @escaping @Sendable (ResponseDisposition) -> Void
    ) {
        completionHandler(dataTask(task, decideOn: response))
    }

    /// The exchange decides at once (``ImmediateResponseDeciding``): the head goes to the client
    /// now, or the task is cancelled or becomes a stream.
    func dataTask(_ task: DataTask, decideOn response: TollgateHTTP.HTTPResponseHead) -> ResponseDisposition {
        guard !isFinished, let connection, connection.isActive else { return .cancel }
        if ownAnswer != nil {
            // The exchange already decided to answer itself (a redirect to a denied destination).
            return .cancel
        }
        noteUpstreamProgress()
        if response.status == 101 {
            guard head.isUpgrade else {
                ownAnswer = OwnResponse(
                    .upstreamProtocolError,
                    "the upstream switched protocols without being asked to"
                )
                return .cancel
            }
            return .becomeStream
        }
        if let refusal = manifestRefusal(of: response) ?? parentProxyRefusal(of: response) {
            ownAnswer = refusal
            return .cancel
        }
        // A redirect the session followed had its target checked before it was sent
        // (ForwardExchange+Redirects).
        startResponse(response)
        return .allow
    }

    /// A `407` from the route's upstream proxy to a plain request: the session answered it with
    /// its `upstream-proxy-credentials` if it has them (RFC 9110 §11.7.1), so this 407 means the
    /// parent refused them or none are set. Passed on, it would read as this proxy asking the
    /// client for credentials (and the parent's `Proxy-Authenticate` is hop-by-hop, not the
    /// client's to answer): it is an upstream fault instead, `502 upstream-unreachable` saying
    /// what to fix — as a parent's refusal of a CONNECT is.
    func parentProxyRefusal(of response: TollgateHTTP.HTTPResponseHead) -> OwnResponse? {
        guard response.status == 407, url.scheme == "http",
            let configuration = record.route?.session.configuration, let parent = configuration.upstreamProxy
        else { return nil }
        let why =
            configuration.upstreamProxyCredential == nil
            ? "the session has no upstream-proxy-credentials"
            : "it did not accept the session's upstream-proxy-credentials"
        return OwnResponse(
            .upstreamUnreachable,
            "the upstream proxy \(parent.host):\(parent.port) asks for credentials (407 \(response.reason)): \(why)"
        )
    }

    /// Sends the response head to the client.
    func startResponse(_ response: TollgateHTTP.HTTPResponseHead) {
        guard !isFinished, let connection else { return }
        // The hop-by-hop lines are left out as the head is written, not removed from a copy.
        var omission = HopByHopHeaders.omission(for: response.headerFields)
        var fields = response.headerFields
        if omission?.namesOtherFields == true {
            // Connection names other fields (perhaps Content-Length, which framing reads): they
            // go before anything looks at the rest.
            fields = HopByHopHeaders.removing(from: fields)
            omission = nil
        }
        if response.headerFields.contains(.transferEncoding) {
            // Transfer-Encoding overrides Content-Length (RFC 9112 §6.3).
            fields.remove(.contentLength)
        }
        var compression = ResponseCompression.Verdict.none
        if let rule = record.route?.compress, manifestCheck == nil, !head.isUpgrade {
            compression = ResponseCompression.verdict(rule: rule, requestFields: head.headerFields, status: response.status, responseFields: fields)
            if !head.isHead, case .compressed = compression {
                bodyEncoder = ResponseCompression.encoder(for: compression, rule: rule)
                // No encoder (out of memory): the body goes as it is, and its head must say so.
                if bodyEncoder == nil { compression = .varyOnly }
            }
        }
        let edits = record.route?.responseHeaders
        let references = clientFacingReferences(for: fields)
        if compression != .none || edits != nil || !references.isEmpty {
            // References written for the client's URL, compression, then the rule's
            // `response-headers` (which may change what either wrote), on what the client gets
            // (the stored copy keeps the origin's): on a list without the hop-by-hop lines,
            // which none may touch.
            if omission != nil {
                fields = HopByHopHeaders.removing(from: fields)
                omission = nil
            }
            for rewrite in references { rewrite.apply(to: &fields) }
            ResponseCompression.apply(compression, to: &fields)
            edits?.apply(to: &fields)
        }
        // Formatted only for an unusual version: interpolation allocates, and this runs per response.
        let via: String
        switch response.version {
        case "HTTP/1.1": via = "1.1 tollgate"
        case "HTTP/1.0": via = "1.0 tollgate"
        default:
            let version = response.version.hasPrefix("HTTP/") ? String(response.version.dropFirst(5)) : response.version
            via = "\(version) tollgate"
        }
        // The proxy's own fields go in a list of their own, written after the response's: adding
        // them to the response's list would copy it (the task keeps the response too).
        var added = connection.takeAddedFields()
        added.reserveCapacity(4)
        added.add(name: .via, value: via)
        if var outcome = task?.cacheOutcome {
            if manifestNegotiated { outcome.detail = "negotiated" }
            if rules.offline { outcome.detail = outcome.detail.map { "offline," + $0 } ?? "offline" }
            added.add(name: .cacheStatus, value: memo.cacheStatus(for: outcome))
        }
        var bodyLength: Int64?
        let framing = ResponseFraming.decide(
            status: response.status,
            fields: &fields,
            added: &added,
            requestIsHead: head.isHead,
            clientMinorVersion: head.minorVersion,
            bodyLength: &bodyLength
        )
        responseStarted = true
        record.status = response.status
        connection.sendHead(
            HTTPResponseHead(status: response.status, reason: response.reason, headerFields: fields),
            adding: &added,
            omitting: omission,
            framing: framing,
            bodyLength: bodyLength,
            close: closeAfterResponse
        )
    }

    /// The rewrites of `fields`' references the response needs, in order: back through the
    /// rule's `map-remote`, then from a reverse listener's upstream to the client's `Host`.
    /// Empty (and no lookup) for a forward request that was not mapped.
    private func clientFacingReferences(for fields: HeaderFields) -> [ClientFacingReferences] {
        let upstream: HTTPURL?
        if case .reverse(let reverseUpstream) = environment.mode { upstream = reverseUpstream } else { upstream = nil }
        guard mappedReferences != nil || upstream != nil, ClientFacingReferences.mayApply(to: fields) else { return [] }
        var rewrites: [ClientFacingReferences] = []
        if let mappedReferences { rewrites.append(mappedReferences) }
        if let upstream,
            let client = ClientFacingReferences.reverseClient(host: head.headerFields[.host], secure: memo.clientTLS != nil)
        {
            // What the listener loaded before any mapping: the upstream's URL for this request.
            let loaded = mappedReferences?.client ?? url
            rewrites.append(ClientFacingReferences(mapping: HostRule.RemoteMapping(path: "/", to: upstream), loaded: loaded, client: client))
        }
        return rewrites
    }

    func dataTask(_ task: DataTask, didReceive data: ByteBuffer) {
        guard !isFinished, responseStarted, let connection else { return }
        noteUpstreamProgress()
        if manifestCheck != nil {
            record.bodyBytes += Int64(data.readableBytes)
            passChecked(data, to: connection)
        } else {
            sendBodyPiece(data, to: connection)
        }
    }

    /// Writes a piece of the response body, compressed first when the response is
    /// (``bodyEncoder``), and counts what went out. (Inlined: every body piece passes here.)
    @inline(__always)
    func sendBodyPiece(_ piece: ByteBuffer, to connection: any ClientResponder) {
        if let bodyEncoder {
            let compressed = bodyEncoder.compress(piece, allocator: Self.allocator)
            record.bodyBytes += Int64(compressed.readableBytes)
            if compressed.readableBytes > 0 { connection.sendBody(compressed) }
        } else {
            record.bodyBytes += Int64(piece.readableBytes)
            connection.sendBody(piece)
        }
    }

    // MARK: a stored body as a file region (StoredFileReceiving)

    /// A stored body goes to the client with `sendfile` when the client connection takes it
    /// (``ClientResponder/acceptsFileRegion``: length-framed, plain TCP) and it is not a
    /// large body for a loopback client (``StoredBodyTransfer``).
    func dataTask(_ task: DataTask, acceptsFileRegionOf length: Int64) -> Bool {
        // A body checked against the manifest is hashed as it goes: it is read, not sent by sendfile.
        guard !isFinished, responseStarted, manifestCheck == nil, bodyEncoder == nil, let connection else { return false }
        return connection.acceptsFileRegion
            && StoredBodyTransfer.usesSendfile(length: length, clientIsLoopback: memo.clientIsLoopback)
    }

    func dataTask(_ task: DataTask, didReceive region: FileRegion, done: @escaping @Sendable ((any Error)?) -> Void) {
        guard !isFinished, let connection, let written = connection.sendFile(region) else {
            done(ChannelError.ioOnClosedChannel)
            return
        }
        noteUpstreamProgress()
        record.bodyBytes += Int64(region.readableBytes)
        sendingStoredFile = true
        written.whenComplete { [self] result in
            sendingStoredFile = false
            noteUpstreamProgress()
            if case .failure(let error) = result { done(error) } else { done(nil) }
        }
    }

    func dataTask(_ task: DataTask, didBecome streamTask: StreamTask) {
        // An HTTP/1.1 connection, or the HTTP/2 stream of an extended CONNECT (RFC 8441), whose
        // head is the WebSocket upgrade it stands for (`Upgrade` is malformed on any other
        // stream, so `head.isUpgrade` refused a 101 there already).
        guard !isFinished, let connection = connection as? any ClientTunnelHost, let response = streamTask.response else {
            streamTask.cancel()
            return
        }
        becameStream = true
        self.task = nil
        LoopDeadlines.of(eventLoop).unwatch(self)
        var fields = HopByHopHeaders.removing(from: response.headerFields)
        fields.add(name: .connection, value: "Upgrade")
        for value in response.headerFields.values(for: .upgrade) { fields.add(name: .upgrade, value: value) }
        fields.add(name: .via, value: "1.1 tollgate")
        record.status = 101
        // A WebSocket upgrade is relayed frame by frame; any other protocol as opaque bytes.
        let isWebSocket = Self.upgradesTo("websocket", record.head.headerFields) && Self.upgradesTo("websocket", response.headerFields)
        let relay = StreamRelay(
            stream: streamTask, connection: connection, eventLoop: eventLoop,
            webSocket: isWebSocket ? rules.webSocket : nil, idleTimeout: rules.tunnelIdleTimeout
        ) { [self] totals, _ in
            record.bodyBytes = totals.toClient
            // After the 101 the client's bytes are the upgraded protocol's: counted as a tunnel's are.
            record.requestBodyBytes += totals.toUpstream
            record.webSocket = totals.webSocket
            record.relayEnd = totals.end
            finish()
        }
        streamTask.delegate = relay
        connection.sendInterim(HTTPResponseHead(status: 101, headerFields: fields))
        connection.startRelay(relay)
    }

    /// Whether `fields` name `protocolName` in `Upgrade`.
    private static func upgradesTo(_ protocolName: String, _ fields: HeaderFields) -> Bool {
        FieldList.elements(fields.values(for: .upgrade)).contains { $0.lowercased() == protocolName }
    }

    // MARK: the body's end before the commit (BodyEndReceiving)

    /// The whole body was relayed and the task now commits it to the cache: the client gets the
    /// response's end (and its next request may start) without waiting for the commit's fsyncs.
    /// The exchange stays open until the task completes, and logs then whether it was stored; a
    /// request for the same URL meanwhile waits for the commit, as a collapsed miss does.
    func dataTaskDidReceiveWholeBody(_ task: DataTask) {
        guard !isFinished, responseStarted, !becameStream, manifestCheck == nil, let connection else { return }
        bodyDelivered = true
        clientEnded = Date()
        if deadlineSlot.isWatched { LoopDeadlines.of(eventLoop).unwatch(self) }
        if holdingReads {
            holdingReads = false
            connection.releaseReads()
        }
        self.connection = nil
        sendCompressedEnd(to: connection)
        connection.sendEnd()
    }

    /// The end of a compressed body (its last block and the gzip trailer), before the response's end.
    func sendCompressedEnd(to connection: any ClientResponder) {
        guard let bodyEncoder else { return }
        self.bodyEncoder = nil
        let last = bodyEncoder.finish(allocator: Self.allocator)
        record.bodyBytes += Int64(last.readableBytes)
        if last.readableBytes > 0 { connection.sendBody(last) }
    }

    /// For the bodies the exchange makes itself (compressed ones).
    static let allocator = ByteBufferAllocator()

    func task(_ task: SessionTask, didFinishCollecting metrics: TaskMetrics) {
        record.collect(metrics)
    }

    func task(_ task: SessionTask, didCompleteWithError error: SessionError?) {
        record.cacheOutcome = task.cacheOutcome
        self.task = nil
        guard !isFinished, !becameStream else { return }
        if responseStarted {
            if error == nil, var check = manifestCheck {
                manifestCheck = nil
                finishChecked(&check)
            } else if error == nil {
                if let connection { sendCompressedEnd(to: connection) }
                finish()?.sendEnd()
            } else {
                // Part of the response is out: closing is the only way to tell the client it is
                // incomplete (a short body on a kept-alive connection would look whole).
                finish()?.abort()
            }
            return
        }
        let answer =
            ownAnswer
            ?? error.map { rules.offline ? offlineAnswer(for: $0) : OwnResponse(for: $0) }
            ?? OwnResponse(.upstreamProtocolError, "the task ended without a response")
        respond(answer)
    }
}
