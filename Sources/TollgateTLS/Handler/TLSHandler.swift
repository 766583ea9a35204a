import NIOCore

/// TLS over OpenSSL memory BIOs as a SwiftNIO channel handler, client or server side.
///
/// Put it first in the pipeline: ciphertext `ByteBuffer`s come in from the socket, plaintext `ByteBuffer`s
/// go on to the next handler, and plaintext writes are encrypted on `flush`. The handshake starts when the
/// channel becomes active (or at once, when the handler is added to an active channel) and must finish
/// within ``TLSConfiguration/handshakeTimeout``.
///
/// When it completes the handler fires a ``TLSHandshakeCompleted`` user event carrying a
/// ``TLSPeerEvaluation``. With ``TLSConfiguration/deferTrustDecision`` set, the handshake completes even
/// when the peer's chain does not verify, and the handler holds application data in both directions
/// (decrypted data is buffered, writes are queued) until ``approvePeer()``: the session checks pins or asks
/// its delegate first, then approves or closes the channel. Without it, an untrusted chain fails the
/// handshake with ``TLSError/peerUntrusted`` and data flows as soon as the handshake completes.
///
/// Back-pressure: the handler reads from the socket only while the handshake needs data or the next
/// handler has asked (`read()`) and nothing decrypted is waiting; each `read()` is answered with at most
/// one `channelRead` of everything decrypted so far, followed by `channelReadComplete`. With `autoRead`
/// off, no plaintext arrives beyond what was asked for.
///
/// Closing sends `close_notify` and closes the socket once it is written (or after
/// ``TLSConfiguration/closeTimeout``). A `close_notify` from the peer delivers what was decrypted, answers
/// with our own and closes the channel. A peer that closes TCP without `close_notify` leaves the handler
/// treating it as EOF, after firing ``TLSError/uncleanShutdown`` when
/// ``TLSConfiguration/reportsUncleanShutdown`` is set.
///
/// Half-closing is TLS's `close_notify` for one direction: `close(mode: .output)` encrypts the writes
/// flushed so far, sends `close_notify` and goes on reading (later writes fail with
/// `ChannelError.outputClosed`; the TCP connection stays open); the peer's `close_notify` then closes the
/// channel. On a channel with `allowRemoteHalfClosure`, the peer's `close_notify` delivers what was
/// decrypted and fires `ChannelEvent.inputClosed`, and writing goes on until the application closes —
/// what a socket does with the peer's EOF. `close(mode: .input)` fails with `operationUnsupported`.
///
/// Errors (``TLSError``) are fired with `errorCaught`, and the channel is closed after them.
///
/// Not thread-safe: call ``approvePeer()`` and read ``peerEvaluation`` on the channel's event loop.
public final class TLSHandler: ChannelDuplexHandler {
    public typealias InboundIn = ByteBuffer
    public typealias InboundOut = ByteBuffer
    public typealias OutboundIn = ByteBuffer
    public typealias OutboundOut = ByteBuffer

    private struct PendingWrite {
        var data: ByteBuffer
        let promise: EventLoopPromise<Void>?
    }

    /// Ciphertext is written to the socket in pieces of about this size while a large write is encrypted.
    private static let ciphertextChunkSize = 64 * 1024

    private var stateMachine: TLSHandlerStateMachine
    private let connection: TLSConnection
    private var context: ChannelHandlerContext?
    private var handshakeTimer: Scheduled<Void>?
    private var closeTimer: Scheduled<Void>?
    /// Decrypted data not yet delivered.
    private var plaintext = ByteBuffer()
    /// Plaintext writes not yet encrypted; the mark is the last flushed one.
    private var pendingWrites = MarkedCircularBuffer<PendingWrite>(initialCapacity: 8)
    /// Promises of encrypted writes waiting for the socket write that carries their last bytes.
    private var encryptedWritePromises: [EventLoopPromise<Void>] = []
    /// The most recent ciphertext write, so that an empty plaintext write completes after it.
    private var lastCiphertextWrite: EventLoopFuture<Void>?
    /// The next handler called `read()` and has not been given data since.
    private var readRequested = false
    /// OpenSSL could not encrypt until it reads (a post-handshake message was half-received).
    private var encryptionNeedsRead = false
    /// The promise of the application's `close`, completed when the socket closes.
    private var closePromise: EventLoopPromise<Void>?
    /// The socket close was issued.
    private var closeIssued = false

    /// What the handshake established; nil until ``TLSHandshakeCompleted`` fires.
    public private(set) var peerEvaluation: TLSPeerEvaluation?

    private init(context: TLSContext, role: TLSConnection.Role) throws {
        self.connection = try TLSConnection(context: context, role: role)
        self.stateMachine = TLSHandlerStateMachine(
            defersTrustDecision: context.configuration.deferTrustDecision,
            reportsUncleanShutdown: context.configuration.reportsUncleanShutdown,
            lingersAfterFailure: role == .server
        )
    }

    /// A handler for the client side of a connection.
    ///
    /// - Parameters:
    ///   - context: the TLS context (trust, identity, ALPN, …).
    ///   - serverHostname: the host being connected to: sent in SNI unless it is an IP address, and checked
    ///     against the server's certificate under ``CertificateVerification/fullVerification``.
    /// - Throws: ``TLSError/invalidConfiguration`` when full verification has no host name to check;
    ///   ``OpenSSLError`` when OpenSSL refuses the host name.
    public static func makeClientHandler(context: TLSContext, serverHostname: String?) throws -> TLSHandler {
        try TLSHandler(context: context, role: .client(serverHostname: serverHostname))
    }

    /// A handler for the server side of a connection.
    ///
    /// - Parameter context: the TLS context; its configuration needs an identity or a server-name handler.
    /// - Throws: ``TLSError/invalidConfiguration`` when it has neither.
    public static func makeServerHandler(context: TLSContext) throws -> TLSHandler {
        try TLSHandler(context: context, role: .server)
    }

    /// Lets application data flow after a deferred trust decision. Idempotent, and ignored once the
    /// channel is closing.
    ///
    /// Call it on the channel's event loop after ``TLSHandshakeCompleted`` (calling it before is a
    /// programming error and traps). Held decrypted data is delivered at the next `read()` (at once if one
    /// is pending) and held writes are encrypted and sent.
    public func approvePeer() {
        guard let context = self.context else { return }
        context.eventLoop.preconditionInEventLoop()
        self.run(self.stateMachine.peerApproved(), context: context)
    }

    // MARK: - Channel events

    public func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        self.plaintext = context.channel.allocator.buffer(capacity: 0)
        if context.channel.isActive {
            self.run(self.stateMachine.channelActive(), context: context)
        }
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        self.cancelTimers()
        self.failPendingWrites(ChannelError.ioOnClosedChannel)
        self.context = nil
    }

    public func channelActive(context: ChannelHandlerContext) {
        // Fired first, so that a handshake failing at once is followed by a channelInactive that makes sense.
        context.fireChannelActive()
        self.run(self.stateMachine.channelActive(), context: context)
    }

    public func channelInactive(context: ChannelHandlerContext) {
        // Data decrypted before the EOF is real data: hand it over before the end.
        if self.stateMachine.deliversApplicationData { self.deliverPlaintext(context: context, force: true) }
        self.run(self.stateMachine.channelInactive(), context: context)
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if self.stateMachine.isLingering { return }  // dropped: only the client's EOF is waited for
        self.connection.feedCiphertext(self.unwrapInboundIn(data))
        if self.stateMachine.isHandshaking {
            self.stepHandshake(context: context)
        } else if self.stateMachine.decryptsApplicationData {
            self.decrypt(context: context)
            if self.encryptionNeedsRead { self.encryptPendingWrites(context: context) }
        }
        // Otherwise (closing, closed) the ciphertext is dropped.
    }

    public func channelReadComplete(context: ChannelHandlerContext) {
        if self.stateMachine.isLingering {
            context.read()  // on to the EOF, whatever the channel's autoRead
            return
        }
        if self.stateMachine.deliversApplicationData { self.deliverPlaintext(context: context, force: false) }
        self.readFromSocketIfNeeded(context: context)
    }

    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // With allowRemoteHalfClosure the socket's EOF arrives here rather than as channelInactive.
        if case .some(.inputClosed) = event as? ChannelEvent, self.stateMachine.isLingering {
            self.run(self.stateMachine.lingerEnded(), context: context)
            return
        }
        if case .some(.inputClosed) = event as? ChannelEvent {
            // The peer's close_notify already ended the input, and was told as inputClosed.
            if self.stateMachine.isInputClosed { return }
            if self.stateMachine.decryptsApplicationData, self.connection.context.configuration.reportsUncleanShutdown {
                context.fireErrorCaught(TLSError.uncleanShutdown)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    // MARK: - Outbound operations

    public func read(context: ChannelHandlerContext) {
        self.readRequested = true
        if self.plaintext.readableBytes > 0 {
            // Held until approvePeer(), or delivered now: either way this read is answered.
            guard self.stateMachine.deliversApplicationData else { return }
            self.deliverPlaintext(context: context, force: false)
            self.readAgainIfAutoRead(context: context)
            return
        }
        context.read()
    }

    /// After plaintext that was already decrypted answered a `read()`: with `autoRead` on, the
    /// channel asks for the next read only after a socket read, and none happened, so ask the socket
    /// now or the connection stops reading for good (a request that arrived with the client's
    /// Finished, then the next request on the connection never read). With `autoRead` off the next
    /// handler asks when it wants more.
    private func readAgainIfAutoRead(context: ChannelHandlerContext) {
        guard !self.readRequested, self.stateMachine.decryptsApplicationData,
            (try? context.channel.syncOptions?.getOption(.autoRead)) ?? false
        else { return }
        context.read()
    }

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard !self.stateMachine.isClosingOrClosed else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        guard !self.stateMachine.isOutputClosed else {
            promise?.fail(ChannelError.outputClosed)
            return
        }
        self.pendingWrites.append(PendingWrite(data: self.unwrapOutboundIn(data), promise: promise))
    }

    public func flush(context: ChannelHandlerContext) {
        self.pendingWrites.mark()
        if self.stateMachine.encryptsApplicationData { self.encryptPendingWrites(context: context) }
        // Before the handshake completes (or before approval) the flush is remembered by the mark.
    }

    public func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        switch mode {
        case .all:
            break
        case .output:
            self.closeOutput(context: context, promise: promise)
            return
        case .input:
            promise?.fail(ChannelError.operationUnsupported)
            return
        }
        self.attachClosePromise(promise)
        self.run(self.stateMachine.closeRequested(), context: context)
    }

    /// `close(mode: .output)`: our `close_notify`, reading goes on (or, after the peer's, the close).
    private func closeOutput(context: ChannelHandlerContext, promise: EventLoopPromise<Void>?) {
        let closing = self.stateMachine.isClosingOrClosed
        let action = self.stateMachine.outputCloseRequested()
        switch action {
        case .sendCloseNotify:
            self.run(action, context: context)
            // Complete once the close_notify (the last ciphertext) is written.
            if let promise {
                if let last = self.lastCiphertextWrite { last.cascade(to: promise) } else { promise.succeed() }
            }
        case .refuseOutputClose:
            promise?.fail(closing ? ChannelError.alreadyClosed : ChannelError.operationUnsupported)
        case .none:
            promise?.succeed()
        default:
            self.attachClosePromise(promise)
            self.run(action, context: context)
        }
    }

    /// The promise of a close, completed when the socket closes.
    private func attachClosePromise(_ promise: EventLoopPromise<Void>?) {
        if let promise {
            if let existing = self.closePromise {
                existing.futureResult.cascade(to: promise)
            } else {
                self.closePromise = promise
            }
        }
    }

    // MARK: - Actions

    private func run(_ action: TLSHandlerStateMachine.Action, context: ChannelHandlerContext) {
        switch action {
        case .none:
            break

        case .startHandshake:
            let timeout = self.connection.context.configuration.handshakeTimeout
            self.handshakeTimer = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) {
                guard let context = self.context else { return }
                let error = TLSError.handshakeTimeout(after: "\(timeout.nanoseconds / 1_000_000) ms")
                self.run(self.stateMachine.handshakeTimedOut(error), context: context)
            }
            self.stepHandshake(context: context)

        case .continueHandshake:
            self.writeCiphertext(context: context, flush: true)
            context.read()

        case .completeHandshake(let startDataFlow):
            self.handshakeTimer?.cancel()
            self.handshakeTimer = nil
            self.writeCiphertext(context: context, flush: true)
            let evaluation = self.connection.evaluation()
            self.peerEvaluation = evaluation
            context.fireUserInboundEventTriggered(
                TLSHandshakeCompleted(evaluation: evaluation, awaitsApproval: !startDataFlow)
            )
            // The event's receiver may have approved or closed already; decrypt what came with the last
            // handshake flight, then let data flow if it may.
            if self.stateMachine.decryptsApplicationData { self.decrypt(context: context) }
            if self.stateMachine.encryptsApplicationData { self.encryptPendingWrites(context: context) }

        case .startDataFlow:
            self.encryptPendingWrites(context: context)
            let held = self.plaintext.readableBytes > 0
            self.deliverPlaintext(context: context, force: false)
            self.readFromSocketIfNeeded(context: context)
            if held { self.readAgainIfAutoRead(context: context) }

        case .sendCloseNotifyAndClose(let deliverHeldData, let fireInputClosed):
            self.cancelTimers()
            if deliverHeldData { self.deliverPlaintext(context: context, force: true) }
            if fireInputClosed { context.fireUserInboundEventTriggered(ChannelEvent.inputClosed) }
            self.failPendingWrites(ChannelError.ioOnClosedChannel)
            self.connection.shutdown()  // nothing more once ours was sent (a half-close)
            self.closeAfterWritingCiphertext(context: context)

        case .sendCloseNotify:
            // What was flushed goes out before the close_notify; what was not, never.
            self.encryptPendingWrites(context: context)
            self.failPendingWrites(ChannelError.outputClosed)
            self.connection.shutdown()
            self.writeCiphertext(context: context, flush: true)

        case .deliverHeldDataAndFireInputClosed:
            self.deliverPlaintext(context: context, force: true)
            context.fireUserInboundEventTriggered(ChannelEvent.inputClosed)

        case .refuseOutputClose:
            break  // answered by closeOutput

        case .closeChannel:
            self.cancelTimers()
            self.failPendingWrites(ChannelError.ioOnClosedChannel)
            self.closeSocket(context: context)

        case .failAndClose(let error), .failAndLinger(let error):
            self.cancelTimers()
            self.failPendingWrites(error)
            // The alert OpenSSL queued, if any, is written before the error reaches the handlers
            // after this one, which may close the channel at once: the peer learns why. The close
            // (or the linger) waits for the error to have gone round (a write may complete at once).
            let written = self.writePendingCiphertext(context: context)
            context.fireErrorCaught(error)
            if case .failAndLinger = action {
                self.linger(after: written, context: context)
            } else {
                self.close(after: written, context: context)
            }

        case .fireInactive(let error):
            self.cancelTimers()
            // A close asked for while lingering (or closing) completes with the channel's.
            if let promise = self.closePromise {
                self.closePromise = nil
                context.channel.closeFuture.cascade(to: promise)
            }
            self.failPendingWrites(error ?? ChannelError.ioOnClosedChannel)
            if let error { context.fireErrorCaught(error) }
            context.fireChannelInactive()
        }
    }

    private func stepHandshake(context: ChannelHandlerContext) {
        switch self.connection.doHandshake() {
        case .needsMoreData:
            self.run(self.stateMachine.handshakeNeedsMoreData(), context: context)
        case .completed:
            self.run(self.stateMachine.handshakeCompleted(), context: context)
        case .failed(let error):
            self.run(self.stateMachine.handshakeFailed(error), context: context)
        }
    }

    /// Decrypts everything that has arrived into ``plaintext``; delivery happens at `channelReadComplete`
    /// or `read()`.
    private func decrypt(context: ChannelHandlerContext) {
        let result = self.connection.readPlaintext(into: &self.plaintext)
        // Reading may have produced records to send (a key update answer, an alert).
        self.writeCiphertext(context: context, flush: true)
        switch result {
        case .needsMoreData:
            break
        case .closeNotify:
            let halfClosure = (try? context.channel.syncOptions?.getOption(.allowRemoteHalfClosure)) ?? false
            self.run(self.stateMachine.closeNotifyReceived(halfClosureAllowed: halfClosure), context: context)
        case .failed(let error):
            self.run(self.stateMachine.connectionFailed(error), context: context)
        }
    }

    /// Gives the next handler everything decrypted, if it asked (or `force`).
    private func deliverPlaintext(context: ChannelHandlerContext, force: Bool) {
        guard self.readRequested || force, self.plaintext.readableBytes > 0 else { return }
        self.readRequested = false
        let data = self.plaintext
        // A fresh buffer, not `clear()`: the delivered one now belongs to the next handler.
        self.plaintext = context.channel.allocator.buffer(capacity: 0)
        context.fireChannelRead(self.wrapInboundOut(data))
        context.fireChannelReadComplete()
    }

    /// Asks the socket for more when the handshake needs it, or the next handler asked and nothing waits.
    private func readFromSocketIfNeeded(context: ChannelHandlerContext) {
        if self.stateMachine.isHandshaking
            || (self.readRequested && self.plaintext.readableBytes == 0 && self.stateMachine.decryptsApplicationData)
        {
            context.read()
        }
    }

    /// Encrypts every flushed write, sending ciphertext in chunks, then flushes the socket.
    private func encryptPendingWrites(context: ChannelHandlerContext) {
        self.encryptionNeedsRead = false
        var wroteAny = false
        writes: while self.pendingWrites.hasMark, var write = self.pendingWrites.first {
            while write.data.readableBytes > 0 {
                switch self.connection.writePlaintext(&write.data, limit: Int(Int32.max)) {
                case .wrote:
                    if self.connection.pendingCiphertextCount >= TLSHandler.ciphertextChunkSize {
                        self.writeCiphertext(context: context, flush: false)
                        wroteAny = true
                    }
                case .needsRead:
                    self.pendingWrites[self.pendingWrites.startIndex] = write
                    self.encryptionNeedsRead = true
                    break writes
                case .failed(let error):
                    self.pendingWrites[self.pendingWrites.startIndex] = write
                    self.run(self.stateMachine.connectionFailed(error), context: context)
                    return
                }
            }
            _ = self.pendingWrites.removeFirst()
            if let promise = write.promise { self.encryptedWritePromises.append(promise) }
        }
        if self.connection.pendingCiphertextCount > 0 || !self.encryptedWritePromises.isEmpty || wroteAny {
            self.writeCiphertext(context: context, flush: true)
        }
        if self.encryptionNeedsRead { context.read() }
    }

    /// Writes the ciphertext OpenSSL produced and completes the promises of writes it finishes.
    private func writeCiphertext(context: ChannelHandlerContext, flush: Bool) {
        if let ciphertext = self.connection.takeCiphertext(allocator: context.channel.allocator) {
            let promise = context.eventLoop.makePromise(of: Void.self)
            context.write(self.wrapOutboundOut(ciphertext), promise: promise)
            self.lastCiphertextWrite = promise.futureResult
        }
        if !self.encryptedWritePromises.isEmpty {
            // Their last bytes went out with the latest ciphertext write (or an earlier one).
            for promise in self.encryptedWritePromises {
                if let last = self.lastCiphertextWrite { last.cascade(to: promise) } else { promise.succeed() }
            }
            self.encryptedWritePromises.removeAll()
        }
        if flush { context.flush() }
    }

    /// Sends whatever OpenSSL queued (close_notify, an alert), then closes the socket once it is written or
    /// the close timeout runs out.
    private func closeAfterWritingCiphertext(context: ChannelHandlerContext) {
        self.close(after: self.writePendingCiphertext(context: context), context: context)
    }

    /// A server's failed handshake: once the alert is written, the socket's output is shut (the
    /// client reads the alert, then the EOF) and reading goes on, dropping what comes, until the
    /// client's EOF or the close timeout — closing with its bytes unread would reset the connection
    /// under the alert (``TLSHandlerStateMachine``).
    private func linger(after written: EventLoopFuture<Void>?, context: ChannelHandlerContext) {
        let timeout = self.connection.context.configuration.closeTimeout
        self.closeTimer = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) {
            guard let context = self.context else { return }
            self.run(self.stateMachine.lingerEnded(), context: context)
        }
        let halfClose: () -> Void = {
            guard let context = self.context, self.stateMachine.isLingering else { return }
            context.close(mode: .output, promise: nil)
            context.read()
        }
        guard let written else { return halfClose() }
        written.assumeIsolated().whenComplete { _ in halfClose() }
    }

    /// Writes and flushes the ciphertext OpenSSL has produced; nil when there is none.
    private func writePendingCiphertext(context: ChannelHandlerContext) -> EventLoopFuture<Void>? {
        guard let ciphertext = self.connection.takeCiphertext(allocator: context.channel.allocator) else { return nil }
        let written = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(self.wrapOutboundOut(ciphertext), promise: written)
        return written.futureResult
    }

    /// Closes the socket once `written` completes (at once without it), or at the close timeout.
    private func close(after written: EventLoopFuture<Void>?, context: ChannelHandlerContext) {
        guard let written else {
            self.closeSocket(context: context)
            return
        }
        let timeout = self.connection.context.configuration.closeTimeout
        self.closeTimer = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) {
            guard let context = self.context else { return }
            self.closeSocket(context: context)
        }
        written.assumeIsolated().whenComplete { _ in
            guard let context = self.context else { return }
            self.closeSocket(context: context)
        }
    }

    private func closeSocket(context: ChannelHandlerContext) {
        self.closeTimer?.cancel()
        self.closeTimer = nil
        let promise = self.closePromise
        self.closePromise = nil
        if self.closeIssued {
            // Already on its way: the promise completes with it.
            if let promise { context.channel.closeFuture.cascade(to: promise) }
            return
        }
        self.closeIssued = true
        context.close(mode: .all, promise: promise)
    }

    private func cancelTimers() {
        self.handshakeTimer?.cancel()
        self.handshakeTimer = nil
        self.closeTimer?.cancel()
        self.closeTimer = nil
    }

    private func failPendingWrites(_ error: any Error) {
        while let write = self.pendingWrites.popFirst() {
            write.promise?.fail(error)
        }
    }
}

@available(*, unavailable)
extension TLSHandler: Sendable {}
