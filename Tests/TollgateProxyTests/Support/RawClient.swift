import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A plain TCP client for exact bytes: it sends what it is told and keeps everything it receives,
/// and notices when the server closes the connection.
final class RawClient: Sendable {
    private struct State {
        var received: [UInt8] = []
        var closed = false
        var endOfInput = false
    }

    private let channel: any Channel
    private let state: NIOLockedValueBox<State>

    private init(channel: any Channel, state: NIOLockedValueBox<State>) {
        self.channel = channel
        self.state = state
    }

    /// Connects to `host`:`port` (127.0.0.1 by default); with `paused`, nothing is read until ``resumeReading()``
    /// (and the receive buffer is kept small), so the server sees a client that does not read.
    /// With `halfClosure`, the server's EOF is noted (``receivedEOF``) while the connection stays
    /// open for sending (see ``shutdownOutput()``).
    static func connect(
        host: String = "127.0.0.1",
        port: Int,
        paused: Bool = false,
        halfClosure: Bool = false
    ) async throws -> RawClient {
        let state = NIOLockedValueBox(State())
        var bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.allowRemoteHalfClosure, value: halfClosure)
        if paused {
            bootstrap =
                bootstrap
                .channelOption(.autoRead, value: false)
                .channelOption(.socketOption(.so_rcvbuf), value: 64 * 1024)
        }
        let channel =
            try await bootstrap
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Collector(state: state))
                }
            }
            .connect(host: host, port: port)
            .get()
        return RawClient(channel: channel, state: state)
    }

    /// The client's own port (to find the proxy's end of the connection).
    var localPort: Int? { channel.localAddress?.port }

    /// Sends bytes as they are.
    func send(_ text: String) async throws {
        try await channel.writeAndFlush(ByteBuffer(string: text)).get()
    }

    /// Starts reading (after `connect(port:paused: true)`).
    func resumeReading() async throws {
        try await channel.setOption(.autoRead, value: true).get()
        channel.read()
    }

    /// How many bytes arrived so far.
    var receivedCount: Int { state.withLockedValue { $0.received.count } }

    /// Sends bytes as they are.
    func send(_ bytes: [UInt8]) async throws {
        try await channel.writeAndFlush(ByteBuffer(bytes: bytes)).get()
    }

    /// Everything received so far.
    var received: [UInt8] { state.withLockedValue { $0.received } }
    /// Everything received so far, as text.
    var text: String { String(decoding: received, as: UTF8.self) }
    /// Whether the server closed the connection.
    var isClosed: Bool { state.withLockedValue { $0.closed } }
    /// Whether the server sent EOF (closed its side, or the whole connection).
    var receivedEOF: Bool { state.withLockedValue { $0.endOfInput || $0.closed } }

    /// Sends EOF (shutdown of the write side); reading goes on.
    func shutdownOutput() async throws {
        try await channel.close(mode: .output).get()
    }

    /// The complete responses received so far.
    var responses: [RawResponse] { RawResponse.parseAll(received).responses }

    /// Waits until `count` complete responses arrived (or throws after `timeout`).
    @discardableResult
    func waitForResponses(_ count: Int, timeout: Duration = .seconds(10)) async throws -> [RawResponse] {
        try await waitUntil("\(count) responses", timeout: timeout) { $0.responses.count >= count }
        return responses
    }

    /// Waits until the server closed the connection.
    func waitForClose(timeout: Duration = .seconds(10)) async throws {
        try await waitUntil("the server closes", timeout: timeout) { $0.isClosed }
    }

    /// Polls `condition` until it holds.
    func waitUntil(_ what: String, timeout: Duration, _ condition: (RawClient) -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while !condition(self) {
            guard ContinuousClock.now < deadline else { throw Timeout(what: what, received: text) }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Closes the connection.
    func close() {
        channel.close(promise: nil)
    }

    struct Timeout: Error, CustomStringConvertible {
        var what: String
        var received: String
        var description: String { "timed out waiting for \(what); received so far: \(received.debugDescription)" }
    }

    private final class Collector: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let state: NIOLockedValueBox<State>
        init(state: NIOLockedValueBox<State>) { self.state = state }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let buffer = unwrapInboundIn(data)
            state.withLockedValue { $0.received += buffer.readableBytesView }
        }

        func channelInactive(context: ChannelHandlerContext) {
            state.withLockedValue { $0.closed = true }
        }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if case ChannelEvent.inputClosed = event { state.withLockedValue { $0.endOfInput = true } }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }
    }
}
