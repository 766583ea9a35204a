import NIOCore
import NIOHTTP1
import TollgateSession

/// Serves one client connection of a forward listener.
///
/// Each request head starts a ``ForwardExchange``; its body parts and end go to that exchange,
/// and the exchange writes its response back through this handler. One exchange at a time:
/// the `HTTPServerPipelineHandler` before this one holds back a pipelined request until the
/// response to the previous one has ended, which keeps responses in request order.
///
/// Besides relaying, the handler does the connection's flow control: it withholds reads from
/// the client while a request body piece waits for the session to take it, and tells the
/// exchange when the client's socket stops or starts being writable.
final class ClientExchangeHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// What every exchange of the listener needs.
    struct Environment: Sendable {
        var session: Session
        var accessLog: AccessLog
    }

    private let environment: Environment
    private var context: ChannelHandlerContext?
    private var current: ForwardExchange?
    private var clientAddress = "-"
    /// Request body pieces handed to the session and not yet taken; reads wait while any is.
    private var piecesInFlight = 0
    private var readWaiting = false

    init(environment: Environment) {
        self.environment = environment
    }

    // MARK: lifecycle

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        clientAddress = context.channel.remoteAddress?.ipAddress ?? "-"
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        current?.clientClosed()
        context.fireChannelInactive()
    }

    // MARK: inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            if let current, !current.isFinished {
                // The pipelining handler never delivers a head while an exchange runs; if it
                // did, the responses could no longer be kept in order.
                current.clientClosed()
                context.close(promise: nil)
                return
            }
            let exchange = ForwardExchange(
                head: head,
                connection: self,
                eventLoop: context.eventLoop,
                environment: environment,
                clientAddress: clientAddress
            )
            current = exchange
            exchange.start()
        case .body(let buffer):
            current?.clientBodyReceived(buffer)
        case .end:
            current?.clientRequestEnded()
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        current?.clientWritabilityChanged(context.channel.isWritable)
        context.fireChannelWritabilityChanged()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard error is HTTPParserError else {
            // A reset or another I/O failure: the connection is gone; channelInactive follows.
            context.close(promise: nil)
            return
        }
        if let current, !current.isFinished {
            current.clientRequestInvalid("the request could not be parsed: \(error)")
        } else if let current, !current.requestEnded {
            // The response to this request was already sent; another one must not be written.
            context.close(promise: nil)
        } else {
            // Between requests: the pipelining handler lets one response through for the error.
            let response = OwnResponse(.badRequest, "the request could not be parsed: \(error)")
            context.write(wrapOutboundOut(.head(response.head(version: .http1_1, close: true))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(response.body))), promise: nil)
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
        }
    }

    // MARK: outbound

    func read(context: ChannelHandlerContext) {
        if piecesInFlight > 0 {
            readWaiting = true
        } else {
            context.read()
        }
    }

    // MARK: for the exchange

    /// Whether the client connection is still open.
    var isActive: Bool { context?.channel.isActive ?? false }

    /// Whether the client's socket takes more bytes now.
    var isWritable: Bool { context?.channel.isWritable ?? false }

    /// Writes one response part; `flush` sends what is buffered.
    func send(_ part: HTTPServerResponsePart, flush: Bool = true) {
        guard let context else { return }
        if flush {
            context.writeAndFlush(wrapOutboundOut(part), promise: nil)
        } else {
            context.write(wrapOutboundOut(part), promise: nil)
        }
    }

    /// Writes the end of the response, then closes the connection once it is sent.
    func sendEndAndClose() {
        guard let context else { return }
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }

    /// Writes bytes straight to the socket, below the HTTP encoder, then closes the connection.
    ///
    /// Only for the answer to CONNECT: NIO's encoder treats any response to CONNECT as the start
    /// of a tunnel and drops its body, and the decoder stops parsing after a CONNECT head, so the
    /// connection cannot carry another request anyway.
    func sendRawAndClose(_ bytes: ByteBuffer) {
        guard let context else { return }
        let channel = context.channel
        guard let encoder = try? context.pipeline.syncOperations.context(handlerType: HTTPResponseEncoder.self) else {
            channel.close(promise: nil)
            return
        }
        encoder.writeAndFlush(NIOAny(bytes)).whenComplete { _ in channel.close(promise: nil) }
    }

    /// Closes the connection (a response that cannot be completed must not look complete).
    func close() {
        context?.close(promise: nil)
    }

    /// Holds reads from the client until the session has taken this request body piece.
    func trackBodyPiece(_ taken: EventLoopFuture<Void>) {
        guard let context else { return }
        piecesInFlight += 1
        taken.hop(to: context.eventLoop).assumeIsolated().whenComplete { [self] _ in
            piecesInFlight -= 1
            if piecesInFlight == 0, readWaiting, let context = self.context {
                readWaiting = false
                context.read()
            }
        }
    }
}
