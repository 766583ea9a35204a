import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
import TollgateTesting

@testable import TollgateSession

/// A TCP server on 127.0.0.1 that does one thing to each connection: resets it once it received
/// a byte (SO_LINGER 0, then close: an RST, not a FIN), or never reads from it.
private final class MisbehavingServer: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    enum Behaviour { case resetOnFirstByte, neverRead }

    let behaviour: Behaviour
    init(_ behaviour: Behaviour) { self.behaviour = behaviour }

    static func start(_ behaviour: Behaviour) async throws -> any Channel {
        try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.autoRead, value: behaviour == .resetOnFirstByte)
            .childChannelOption(.socketOption(.so_rcvbuf), value: 4096)
            .childChannelInitializer { child in
                (child as! any SocketOptionProvider).setSoLinger(linger(l_onoff: 1, l_linger: 0)).flatMapThrowing {
                    try child.pipeline.syncOperations.addHandler(MisbehavingServer(behaviour))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if behaviour == .resetOnFirstByte { context.close(promise: nil) }
    }
}

@Suite("Stream tasks: errors, half-closed sides and timeouts", .serialized, .timeLimit(.minutes(1)))
struct StreamTaskErrorTests {
    /// A running stream task to a server that behaves so, its delegate recording the stream events.
    private func stream(
        to behaviour: MisbehavingServer.Behaviour
    ) async throws -> (task: StreamTask, recorder: StreamRecorder, session: Session, server: any Channel) {
        let server = try await MisbehavingServer.start(behaviour)
        let recorder = StreamRecorder()
        let session = Session(configuration: .ephemeral, delegate: recorder)
        let task = try session.streamTask(withHostName: "127.0.0.1", port: server.localAddress!.port!)
        task.resume()
        return (task, recorder, session, server)
    }

    @Test("After a reset, the waiting read and every later one fail with the error (not EOF), and the task completes with it")
    func resetFailsReads() async throws {
        let (task, recorder, session, server) = try await stream(to: .resetOnFirstByte)
        defer {
            session.invalidateAndCancel()
            server.close(promise: nil)
        }
        let waiting = Task { try await task.readData(ofMinLength: 1, maxLength: 100, timeout: .seconds(5)) }
        try await task.write(ByteBuffer(string: "x"), timeout: .seconds(5))
        await #expect(throws: SessionError(.networkConnectionLost)) { _ = try await waiting.value }
        await #expect(throws: SessionError(.networkConnectionLost)) {
            _ = try await task.readData(ofMinLength: 1, maxLength: 100, timeout: .seconds(5))
        }
        try await eventually("complete") { recorder.events.withLockedValue { $0.contains { $0.hasPrefix("complete") } } }
        #expect(recorder.events.withLockedValue { $0 }.last == "complete networkConnectionLost")
        #expect(task.error?.code == .networkConnectionLost)
        await #expect(throws: SessionError(.networkConnectionLost)) { try await task.write(ByteBuffer(string: "y"), timeout: .seconds(1)) }
    }

    @Test("A read after closeRead fails; a write after closeWrite fails; the other side goes on")
    func closedSidesRefuse() async throws {
        let echo = try await LoopbackEchoServer.start()
        defer { echo.stop() }
        let session = Session(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let reading = try session.streamTask(withHostName: "127.0.0.1", port: echo.port)
        reading.resume()
        reading.closeRead()
        await #expect {
            _ = try await reading.readData(ofMinLength: 1, maxLength: 10, timeout: .seconds(1))
        } throws: { error in
            (error as? SessionError)?.code == .networkConnectionLost && "\(error)".contains("closeRead")
        }
        try await reading.write(ByteBuffer(string: "still writes"), timeout: .seconds(5))

        let writing = try session.streamTask(withHostName: "127.0.0.1", port: echo.port)
        writing.resume()
        try await writing.write(ByteBuffer(string: "before"), timeout: .seconds(5))
        writing.closeWrite()
        await #expect {
            try await writing.write(ByteBuffer(string: "after"), timeout: .seconds(1))
        } throws: { error in
            "\(error)".contains("closeWrite")
        }
        // Reads go on after closeWrite: the echo, then the server's farewell and EOF.
        #expect(try await readToEOF(writing) == "beforebye")
    }

    @Test("A write the peer does not take within its timeout fails with timedOut; the stream is then broken")
    func writeTimeout() async throws {
        let (task, recorder, session, server) = try await stream(to: .neverRead)
        defer {
            session.invalidateAndCancel()
            server.close(promise: nil)
        }
        // Far more than both kernels' buffers hold while nobody reads.
        let big = ByteBuffer(repeating: 0x61, count: 64 << 20)
        let started = ContinuousClock.now
        await #expect(throws: SessionError(.timedOut)) { try await task.write(big, timeout: .milliseconds(300)) }
        #expect(ContinuousClock.now - started < .seconds(5))
        await #expect(throws: SessionError(.timedOut)) { try await task.write(ByteBuffer(string: "z"), timeout: .seconds(1)) }
        await #expect(throws: SessionError(.timedOut)) { _ = try await task.readData(ofMinLength: 1, maxLength: 1, timeout: .seconds(1)) }
        try await eventually("complete") { recorder.events.withLockedValue { $0.contains { $0.hasPrefix("complete") } } }
        #expect(recorder.events.withLockedValue { $0 }.last == "complete timedOut")
    }

    @Test("A timeout of zero waits as long as it takes, for reads and writes")
    func zeroTimeoutWaits() async throws {
        let echo = try await LoopbackEchoServer.start()
        defer { echo.stop() }
        let session = Session(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let task = try session.streamTask(withHostName: "127.0.0.1", port: echo.port)
        task.resume()
        let read = Task { try await task.readData(ofMinLength: 4, maxLength: 100, timeout: .zero) }
        try await Task.sleep(for: .milliseconds(400))
        try await task.write(ByteBuffer(string: "late"), timeout: .zero)
        #expect(try await read.value.data.map { String(buffer: $0) } == "late")
    }
}
