import NIOCore
import TollgateHTTP

/// What exchanges write through: the response, encoded by the ``ResponseWriter``, and the pacing
/// of the request body.
extension ClientConnectionHandler: ClientResponder {
    var isActive: Bool { machine.isActive }

    var isWritable: Bool { context?.channel.isWritable ?? false }

    /// Whether the current response's body may go out as a file region (`sendfile`): its length
    /// frames it, and the connection is plain TCP (not the TLS of an intercepted tunnel, which a
    /// file region cannot pass through).
    var acceptsFileRegion: Bool {
        isActive && writer.framing == .contentLength && intercepted == nil
    }

    func sendInterim(_ head: HTTPResponseHead) {
        guard let context, isActive else { return }
        write(writer.interim(head, minorVersion: machine.minorVersion, allocator: context.channel.allocator), context: context)
        flushSoon()
    }

    func takeAddedFields() -> HeaderFields {
        writer.takeAddedFields()
    }

    func sendHead(
        _ head: HTTPResponseHead,
        adding added: inout HeaderFields,
        omitting omission: HopByHopHeaders.Omission?,
        framing: ResponseFraming,
        bodyLength: Int64?,
        close: Bool
    ) {
        guard let context, isActive else { return }
        machine.responseStarted(close: close || framing == .untilClose)
        let encoded = writer.head(
            head,
            adding: &added,
            omitting: omission,
            framing: framing,
            bodyLength: bodyLength,
            minorVersion: machine.minorVersion,
            willClose: machine.willClose,
            allocator: context.channel.allocator
        )
        // A head held for its body leaves with the first piece; any other goes out at the end of
        // this tick.
        if let encoded {
            write(encoded, context: context)
            flushSoon()
        }
    }

    /// Body bytes are flushed at once: the client's socket then reports how far behind it is,
    /// which is what suspends the task (back-pressure).
    func sendBody(_ piece: ByteBuffer) {
        guard let context, isActive, piece.readableBytes > 0 else { return }
        switch writer.body(piece, allocator: context.channel.allocator) {
        case .nothing:
            return
        case .chunk(let header, let piece):
            context.write(wrapOutboundOut(header), promise: nil)
            context.write(wrapOutboundOut(piece), promise: nil)
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(staticString: "\r\n")), promise: nil)
        case .one(let buffer):
            context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
        case .headThenPiece(let head, let piece):
            write(head, context: context)
            context.writeAndFlush(wrapOutboundOut(piece), promise: nil)
        }
        unflushed = false
    }

    func sendFile(_ region: FileRegion) -> EventLoopFuture<Void>? {
        guard let context, acceptsFileRegion else { return nil }
        releaseHeldHead(context: context)
        unflushed = false
        return context.writeAndFlush(NIOAny(IOData.fileRegion(region)))
    }

    func sendEnd() {
        guard let context, isActive else { return }
        releaseHeldHead(context: context)
        if let last = writer.end() {
            context.writeAndFlush(wrapOutboundOut(last), promise: nil)
        } else if unflushed {
            // Bodies of known length were flushed piece by piece: no empty flush through the pipeline.
            context.flush()
        }
        unflushed = false
        responseEnded()
    }

    func sendOwnAnswer(_ answer: OwnResponse, close: Bool) {
        guard let context, isActive else { return }
        machine.responseStarted(close: close)
        let head = answer.head(minorVersion: machine.minorVersion, close: machine.willClose || machine.hasUnreadBody)
        let buffer = writer.ownAnswer(head, body: answer.body, minorVersion: machine.minorVersion, allocator: context.channel.allocator)
        write(buffer, context: context)
        flushSoon()
        responseEnded()
    }

    /// Closes the connection at once: a response that cannot be completed must not look complete.
    func abort() {
        machine.responseAborted()
        // What was relayed so far goes out first: the client sees the response cut short.
        if let context { releaseHeldHead(context: context) }
        context?.flush()
        context?.close(promise: nil)
    }

    func trackBodyPiece(_ taken: EventLoopFuture<Void>) {
        guard let context else { return }
        machine.bodyPieceSent()
        timeouts.requestBodyProgressed()
        taken.hop(to: context.eventLoop).assumeIsolated().whenComplete { [self] _ in
            machine.bodyPieceTaken()
            updateTimers()
            resumeReadingIfPossible()
        }
    }

    func holdReads() {
        machine.readsHeld()
        updateTimers()
    }

    func releaseReads() {
        machine.readsReleased()
        updateTimers()
        resumeReadingIfPossible()
    }
}
