import NIOCore
import NIOEmbedded
import Testing
import TollgateHTTP
import TollgateSession

@testable import TollgateProxy

/// An upstream a test drives: it keeps the relay's pending read until the test answers it, and
/// takes the relay's writes at once or holds them until released.
final class ScriptedUpstream: RelayUpstream, @unchecked Sendable {
    /// What the relay wrote, in order.
    private(set) var written: [ByteBuffer] = []
    /// Reads the relay made so far.
    private(set) var readsMade = 0
    private(set) var writeClosed = false
    private(set) var cancelled = false
    /// Writes are taken only when released.
    var holdsWrites = false
    private var pendingRead: (@Sendable (ByteBuffer?, Bool, SessionError?) -> Void)?
    private var heldWrites: [@Sendable (SessionError?) -> Void] = []

    var writtenText: String { written.map { String(buffer: $0) }.joined() }
    var hasPendingRead: Bool { pendingRead != nil }
    var isRunning: Bool { !cancelled }

    func readData(
        ofMinLength minLength: Int,
        maxLength: Int,
        timeout: Duration,
        completionHandler: @escaping @Sendable (ByteBuffer?, Bool, SessionError?) -> Void
    ) {
        readsMade += 1
        pendingRead = completionHandler
    }

    func write(_ data: ByteBuffer, timeout: Duration, completionHandler: @escaping @Sendable (SessionError?) -> Void) {
        written.append(data)
        if holdsWrites { heldWrites.append(completionHandler) } else { completionHandler(nil) }
    }

    func closeWrite() { writeClosed = true }
    func cancel() { cancelled = true }

    /// The upstream sends `bytes` (and EOF after them): answers the pending read.
    func send(_ bytes: ByteBuffer, eof: Bool = false) {
        let read = pendingRead!
        pendingRead = nil
        read(bytes, eof, nil)
    }

    func send(_ text: String, eof: Bool = false) { send(ByteBuffer(string: text), eof: eof) }

    /// The upstream's read fails.
    func fail(_ error: SessionError) {
        let read = pendingRead!
        pendingRead = nil
        read(nil, false, error)
    }

    /// Takes every held write.
    func releaseWrites() {
        let held = heldWrites
        heldWrites = []
        for answer in held { answer(nil) }
    }
}

/// What a socket does that an EmbeddedChannel does not: shutting down only its output, and a
/// send buffer that can be full (writes held until released).
final class SocketStandIn: ChannelOutboundHandler {
    typealias OutboundIn = ByteBuffer
    private(set) var outputClosed = false
    /// The client takes no bytes: writes wait.
    var full = false
    private var held: [(NIOAny, EventLoopPromise<Void>?)] = []

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if full { held.append((data, promise)) } else { context.write(data, promise: promise) }
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        guard mode == .output else { return context.close(mode: mode, promise: promise) }
        outputClosed = true
        promise?.succeed()
    }

    /// The client takes bytes again: the held writes go out.
    func drain(context: ChannelHandlerContext) {
        full = false
        for (data, promise) in held { context.write(data, promise: promise) }
        held = []
        context.flush()
    }
}

/// A CONNECT tunnel on an EmbeddedChannel: the real client connection handler and relay, a
/// scripted upstream.
private final class RelayFixture {
    let connection: EmbeddedClientConnection
    let upstream = ScriptedUpstream()
    let socket = SocketStandIn()
    private(set) var relay: StreamRelay?
    private(set) var ended: (totals: StreamRelay.Totals, error: SessionError?)?

    init(webSocket: WebSocketRelayLimits? = nil, idleTimeout: Duration? = nil) throws {
        connection = try EmbeddedClientConnection()
        try connection.channel.pipeline.syncOperations.addHandler(socket, position: .first)
        connection.onStart = { [unowned self] exchange in
            let host = exchange.responder as! any ClientTunnelHost
            let relay = StreamRelay(
                stream: upstream,
                connection: host,
                eventLoop: connection.channel.eventLoop,
                webSocket: webSocket,
                idleTimeout: idleTimeout
            ) { [unowned self] totals, error in ended = (totals, error) }
            self.relay = relay
            host.sendInterim(HTTPResponseHead(status: 200, reason: "Connection Established"))
            host.startRelay(relay)
        }
        try connection.send("CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443\r\n\r\n")
    }

    /// What the client received since the last call.
    func received() throws -> String { try connection.written() }

    /// The bytes the client received since the last call (frames are not text).
    func receivedBytes() throws -> [UInt8] {
        connection.channel.embeddedEventLoop.run()
        var bytes: [UInt8] = []
        while let buffer = try connection.channel.readOutbound(as: ByteBuffer.self) {
            bytes += buffer.readableBytesView
        }
        return bytes
    }

    /// The client half-closes its side.
    func clientSendsEOF() {
        connection.channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        connection.channel.embeddedEventLoop.run()
    }

    func drainClient() throws {
        let context = try connection.channel.pipeline.syncOperations.context(handler: socket)
        socket.drain(context: context)
        connection.channel.embeddedEventLoop.run()
    }
}

@Suite("The stream relay between a client connection and an upstream, on an EmbeddedChannel")
struct StreamRelayTests {
    @Test("Bytes pass both ways unchanged and are counted; each upstream read follows the client taking the last")
    func bytesBothWays() throws {
        let fixture = try RelayFixture()
        #expect(try fixture.received() == "HTTP/1.1 200 Connection Established\r\n\r\n")
        #expect(fixture.upstream.readsMade == 1)
        try fixture.connection.send("hello upstream")
        #expect(fixture.upstream.writtenText == "hello upstream")
        fixture.upstream.send("hello client")
        #expect(try fixture.received() == "hello client")
        #expect(fixture.upstream.readsMade == 2)
        try fixture.connection.send("again")
        #expect(fixture.upstream.writtenText == "hello upstreamagain")
        #expect(fixture.ended == nil)
        #expect(fixture.connection.isOpen)
    }

    @Test("The client's EOF becomes the upstream's closeWrite after the bytes before it; the upstream still answers")
    func clientHalfClose() throws {
        let fixture = try RelayFixture()
        fixture.upstream.holdsWrites = true
        try fixture.connection.send("last words")
        fixture.clientSendsEOF()
        #expect(!fixture.upstream.writeClosed)  // the write before the EOF is not taken yet
        fixture.upstream.releaseWrites()
        #expect(fixture.upstream.writeClosed)
        fixture.relay?.upstreamWriteSideClosed()
        fixture.upstream.send("the answer")
        #expect(try fixture.received().hasSuffix("the answer"))
        #expect(fixture.ended == nil)
        fixture.upstream.send("", eof: true)
        #expect(fixture.socket.outputClosed)
        #expect(fixture.ended?.error == nil)
        #expect(fixture.ended?.totals.toUpstream == 10)
        #expect(fixture.ended?.totals.toClient == 10)
        #expect(fixture.ended?.totals.end == .closed)
        #expect(!fixture.connection.isOpen)
    }

    @Test("The upstream's EOF shuts down the client's output only; the client's bytes still reach the upstream")
    func upstreamHalfClose() throws {
        let fixture = try RelayFixture()
        fixture.upstream.send("bye", eof: true)
        #expect(try fixture.received().hasSuffix("bye"))
        #expect(fixture.socket.outputClosed)
        #expect(fixture.connection.isOpen)
        #expect(fixture.upstream.readsMade == 1)  // nothing more is read after EOF
        try fixture.connection.send("still talking")
        #expect(fixture.upstream.writtenText == "still talking")
        fixture.clientSendsEOF()
        #expect(fixture.upstream.writeClosed)
        #expect(fixture.ended?.totals.end == .closed)
        #expect(fixture.ended?.error == nil)
        #expect(!fixture.connection.isOpen)
    }

    @Test("An upstream failure ends the relay with that error and closes the client connection")
    func upstreamError() throws {
        let fixture = try RelayFixture()
        fixture.upstream.fail(SessionError(.networkConnectionLost, nil, "reset by the upstream"))
        fixture.connection.channel.embeddedEventLoop.run()
        #expect(fixture.ended?.error?.code == .networkConnectionLost)
        #expect(fixture.ended?.totals.end == .upstreamFailed)
        #expect(!fixture.connection.isOpen)
    }

    @Test(
        "The upstream task completing cleanly half-closes the client's output; completing with an error ends the relay"
    )
    func upstreamCompletes() throws {
        let clean = try RelayFixture()
        clean.relay?.upstreamCompleted(nil)
        #expect(clean.socket.outputClosed)
        #expect(clean.ended == nil)  // the client may still send
        #expect(clean.connection.isOpen)

        let failed = try RelayFixture()
        failed.relay?.upstreamCompleted(SessionError(.secureConnectionFailed, nil, "the upstream's TLS failed"))
        #expect(failed.ended?.error?.code == .secureConnectionFailed)
        #expect(failed.ended?.totals.end == .upstreamFailed)
        #expect(!failed.connection.isOpen)
    }

    @Test("An opaque relay with no byte either way for its idle timeout ends, closing both sides; each byte puts it off")
    func idleTimeout() throws {
        let fixture = try RelayFixture(idleTimeout: .seconds(5))
        _ = try fixture.received()
        let loop = fixture.connection.channel.embeddedEventLoop
        loop.advanceTime(by: .seconds(4))
        try fixture.connection.send("ping")  // the client at 4 s
        loop.advanceTime(by: .seconds(4))
        #expect(fixture.ended == nil)  // 8 s: 4 s since the last byte
        fixture.upstream.send("pong")  // the upstream at 8 s
        #expect(try fixture.received() == "pong")
        loop.advanceTime(by: .seconds(4))
        #expect(fixture.ended == nil)  // 12 s
        #expect(fixture.connection.isOpen)
        #expect(fixture.upstream.isRunning)
        loop.advanceTime(by: .seconds(1))  // 13 s: 5 s with no byte either way
        #expect(fixture.ended?.totals.end == .idleTimeout)
        #expect(fixture.ended?.error == nil)
        #expect(fixture.ended?.totals.toUpstream == 4)
        #expect(fixture.ended?.totals.toClient == 4)
        #expect(fixture.upstream.cancelled)
        #expect(!fixture.connection.isOpen)
    }

    @Test("A relay without an idle timeout is left open however long it is quiet")
    func noIdleTimeout() throws {
        let fixture = try RelayFixture()
        _ = try fixture.received()
        fixture.connection.channel.embeddedEventLoop.advanceTime(by: .hours(24))
        #expect(fixture.ended == nil)
        #expect(fixture.connection.isOpen)
    }

    @Test("The client going away ends the relay and cancels the upstream")
    func clientGone() throws {
        let fixture = try RelayFixture()
        try fixture.connection.send("partial")
        #expect(fixture.upstream.isRunning)
        fixture.connection.channel.pipeline.fireChannelInactive()
        fixture.connection.channel.embeddedEventLoop.run()
        #expect(fixture.upstream.cancelled)
        #expect(fixture.ended?.error == nil)
        #expect(fixture.ended?.totals.end == .clientClosed)
        #expect(fixture.ended?.totals.toUpstream == 7)
    }

    @Test("A client that takes no bytes stops the upstream reads until it takes them")
    func clientBackPressure() throws {
        let fixture = try RelayFixture()
        _ = try fixture.received()
        fixture.socket.full = true
        fixture.upstream.send("first")
        #expect(!fixture.upstream.hasPendingRead)
        #expect(fixture.upstream.readsMade == 1)
        try fixture.drainClient()
        #expect(try fixture.received() == "first")
        #expect(fixture.upstream.readsMade == 2)
        #expect(fixture.upstream.hasPendingRead)
    }

    @Test("An upstream that has not taken a write stops the client being read until it takes it")
    func upstreamBackPressure() throws {
        let fixture = try RelayFixture()
        let relay = try #require(fixture.relay)
        #expect(relay.wantsClientBytes)
        fixture.upstream.holdsWrites = true
        try fixture.connection.send("slow")
        #expect(!relay.wantsClientBytes)
        let readsBefore = fixture.connection.reads.reads
        fixture.connection.channel.read()
        #expect(fixture.connection.reads.reads == readsBefore)  // the handler did not pass the read on
        fixture.upstream.releaseWrites()
        #expect(relay.wantsClientBytes)
        #expect(fixture.connection.reads.reads > readsBefore)  // taken: the client is read again
    }

    @Test("A WebSocket message from the client over the limit closes both sides with 1009")
    func webSocketTooBigFromClient() throws {
        let fixture = try RelayFixture(
            webSocket: WebSocketRelayLimits(maximumMessageSize: 8, idleTimeout: .seconds(3600))
        )
        _ = try fixture.received()
        let mask: [UInt8] = [1, 2, 3, 4]
        let small: [UInt8] =
            [0x81, 0x80 | 3] + mask + Array("abc".utf8).enumerated().map { $0.element ^ mask[$0.offset % 4] }
        try fixture.connection.channel.writeInbound(ByteBuffer(bytes: small))
        #expect(fixture.upstream.written.count == 1)
        let big: [UInt8] = [0x81, 0x80 | 20] + mask + [UInt8](repeating: 0x55, count: 20)
        try fixture.connection.channel.writeInbound(ByteBuffer(bytes: big))
        fixture.connection.channel.embeddedEventLoop.run()
        // To the upstream: a masked close frame with 1009.
        let close = Array(try #require(fixture.upstream.written.last).readableBytesView)
        #expect(close.count == 8)
        #expect(close[0] == 0x88 && close[1] == 0x82)
        #expect([close[6] ^ close[2], close[7] ^ close[3]] == [0x03, 0xF1])
        // To the client: an unmasked close frame with 1009, then the connection closes.
        #expect(try fixture.receivedBytes().suffix(4) == [0x88, 0x02, 0x03, 0xF1])
        #expect(fixture.ended?.totals.webSocket?.closeCode == 1009)
        #expect(fixture.ended?.totals.end == .proxyClosed)
        #expect(!fixture.connection.isOpen)
    }

    @Test("A WebSocket message from the upstream over the limit closes both sides with 1009")
    func webSocketTooBigFromUpstream() throws {
        let fixture = try RelayFixture(
            webSocket: WebSocketRelayLimits(maximumMessageSize: 8, idleTimeout: .seconds(3600))
        )
        _ = try fixture.received()
        fixture.upstream.send(ByteBuffer(bytes: [0x82, 4, 1, 2, 3, 4]))
        #expect(try fixture.receivedBytes() == [0x82, 4, 1, 2, 3, 4])
        fixture.upstream.send(ByteBuffer(bytes: [0x82, 30] + [UInt8](repeating: 7, count: 30)))
        fixture.connection.channel.embeddedEventLoop.run()
        #expect(try fixture.receivedBytes().suffix(4) == [0x88, 0x02, 0x03, 0xF1])
        let close = Array(try #require(fixture.upstream.written.last).readableBytesView)
        #expect(close[0] == 0x88 && close[1] == 0x82)
        #expect(fixture.ended != nil)
        #expect(!fixture.connection.isOpen)
    }
}
