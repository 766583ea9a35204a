import NIOCore
import TollgateTLS

/// The byte pipe under a stream task: buffers what arrives, hands it out to reads as asked,
/// and reads from the socket only while a read is waiting for more (back-pressure).
///
/// A connection that fails (a reset, a TLS alert) is not an end of stream: the waiting reads and
/// every later one fail with the error, so the owner can tell a peer that finished from one that
/// broke off.
final class StreamConnectionHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    struct PendingRead {
        var minLength: Int
        var maxLength: Int
        var promise: EventLoopPromise<(ByteBuffer?, Bool)>
    }

    private var buffer = ByteBuffer()
    private var reads: [PendingRead] = []
    private var inputClosed = false
    private var context: ChannelHandlerContext?
    private var readInFlight = false
    /// The error the connection failed with; reads fail with it from then on.
    private(set) var failure: (any Error)?
    /// Called when the peer closed its side (EOF): `readClosed`.
    var onInputClosed: (@Sendable () -> Void)?
    /// Called when a TLS handshake the stream task started completed (its trust to be decided).
    var onTLSHandshake: (@Sendable (TLSPeerEvaluation) -> Void)?
    /// The TLS handler the stream task added (kept here: it lives on this channel's loop).
    var tlsHandler: TLSHandler?
    /// Called once when the connection is gone, with the error it failed with (nil: closed).
    var onInactive: (@Sendable ((any Error)?) -> Void)?

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    /// Takes over bytes that arrived before this handler (leftovers after an upgrade).
    func prepend(_ bytes: ByteBuffer) {
        var bytes = bytes
        buffer.writeBuffer(&bytes)
    }

    /// No more bytes will come (a stream of held bytes only): reads get the buffer, then EOF.
    func endInput() {
        inputClosed = true
        serveReads()
    }

    /// Withdraws a read that has not been served (its timeout fired); its promise fails with `error`.
    func cancelRead(_ promise: EventLoopPromise<(ByteBuffer?, Bool)>, error: any Error) {
        guard let index = reads.firstIndex(where: { $0.promise.futureResult === promise.futureResult }) else { return }
        reads.remove(at: index)
        promise.fail(error)
    }

    /// Reads between `minLength` and `maxLength` bytes; fewer only at EOF (`atEOF` true).
    func read(minLength: Int, maxLength: Int, promise: EventLoopPromise<(ByteBuffer?, Bool)>) {
        if let failure {
            promise.fail(failure)
            return
        }
        reads.append(PendingRead(minLength: max(0, minLength), maxLength: max(1, maxLength), promise: promise))
        serveReads()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        buffer.writeBuffer(&bytes)
        // Bytes can arrive outside a read cycle (the HTTP decoder hands over what followed a 101
        // when it leaves the pipeline): serve waiting reads now, not at the next socket read.
        serveReads()
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        readInFlight = false
        serveReads()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let completed = event as? TLSHandshakeCompleted {
            onTLSHandshake?(completed.evaluation)
            onTLSHandshake = nil
        }
        if case ChannelEvent.inputClosed = event {
            inputClosed = true
            serveReads()
            onInputClosed?()
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        inputClosed = true
        serveReads()
        onInactive?(failure)
        onInactive = nil
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(error)
        context.close(promise: nil)
    }

    /// Fails the waiting reads and every later one with `error` (the first error counts).
    func fail(_ error: any Error) {
        if failure == nil { failure = error }
        let pending = reads
        reads = []
        for read in pending { read.promise.fail(failure ?? error) }
    }

    private func serveReads() {
        while let first = reads.first {
            if buffer.readableBytes >= max(1, first.minLength) || (inputClosed && buffer.readableBytes > 0) {
                reads.removeFirst()
                let count = min(first.maxLength, buffer.readableBytes)
                let slice = buffer.readSlice(length: count)
                buffer.discardReadBytes()
                first.promise.succeed((slice, inputClosed && buffer.readableBytes == 0))
            } else if inputClosed {
                reads.removeFirst()
                first.promise.succeed((nil, true))
            } else if first.minLength == 0 {
                reads.removeFirst()
                first.promise.succeed((nil, false))
            } else {
                break
            }
        }
        if !reads.isEmpty, !inputClosed, !readInFlight, let context, context.channel.isActive {
            readInFlight = true
            context.read()
        }
    }
}
