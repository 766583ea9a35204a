import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
import TollgateTLS
import TollgateTesting

/// What one side of a test connection saw, shared between its event loop and the test.
final class ConnectionLog: Sendable {
    private struct State {
        var received: [UInt8] = []
        var deliveries = 0
        var handshakes: [TLSHandshakeCompleted] = []
        var tlsErrors: [TLSError] = []
        var otherErrors: [String] = []
        var inactive = 0
        var inputCloses = 0
    }

    private let state = NIOLockedValueBox(State())

    var received: [UInt8] { self.state.withLockedValue { $0.received } }
    var receivedText: String { String(decoding: self.received, as: UTF8.self) }
    /// How many `channelRead`s the application saw.
    var deliveries: Int { self.state.withLockedValue { $0.deliveries } }
    var handshakes: [TLSHandshakeCompleted] { self.state.withLockedValue { $0.handshakes } }
    var handshake: TLSHandshakeCompleted? { self.handshakes.first }
    var tlsErrors: [TLSError] { self.state.withLockedValue { $0.tlsErrors } }
    var otherErrors: [String] { self.state.withLockedValue { $0.otherErrors } }
    var isInactive: Bool { self.state.withLockedValue { $0.inactive > 0 } }
    /// How many `ChannelEvent.inputClosed` the application saw.
    var inputCloses: Int { self.state.withLockedValue { $0.inputCloses } }

    func record(received bytes: ByteBuffer) {
        self.state.withLockedValue {
            $0.received += bytes.readableBytesView
            $0.deliveries += 1
        }
    }
    func record(handshake: TLSHandshakeCompleted) { self.state.withLockedValue { $0.handshakes.append(handshake) } }
    func record(error: any Error) {
        self.state.withLockedValue {
            if let error = error as? TLSError { $0.tlsErrors.append(error) } else { $0.otherErrors.append("\(error)") }
        }
    }
    func recordInactive() { self.state.withLockedValue { $0.inactive += 1 } }
    func recordInputClosed() { self.state.withLockedValue { $0.inputCloses += 1 } }
}

/// The application handler behind a ``TLSHandler`` in tests: records everything and optionally answers.
final class RecordingHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    struct Behaviour: Sendable {
        /// Write every received buffer back.
        var echo = false
        /// Written and flushed as soon as the handshake completes.
        var greeting: [UInt8]? = nil
        /// Close the channel after answering the first data received.
        var closeAfterFirstReply = false
    }

    private let log: ConnectionLog
    private let behaviour: Behaviour

    init(log: ConnectionLog, behaviour: Behaviour = Behaviour()) {
        self.log = log
        self.behaviour = behaviour
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event { self.log.recordInputClosed() }
        if let completed = event as? TLSHandshakeCompleted {
            self.log.record(handshake: completed)
            if let greeting = self.behaviour.greeting {
                context.writeAndFlush(self.wrapOutboundOut(ByteBuffer(bytes: greeting)), promise: nil)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = self.unwrapInboundIn(data)
        self.log.record(received: buffer)
        if self.behaviour.echo || self.behaviour.closeAfterFirstReply {
            context.writeAndFlush(self.wrapOutboundOut(buffer), promise: nil)
        }
        if self.behaviour.closeAfterFirstReply { context.close(promise: nil) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        self.log.record(error: error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.log.recordInactive()
        context.fireChannelInactive()
    }
}

/// A TLS server of ours on 127.0.0.1 with a ``RecordingHandler`` behind the ``TLSHandler``.
struct LoopbackTLSServer {
    let channel: any Channel
    /// What the server's connections saw (all of them together).
    let log: ConnectionLog

    var port: Int { self.channel.localAddress!.port! }

    static func start(
        context: TLSContext,
        behaviour: RecordingHandler.Behaviour = .init(echo: true)
    ) async throws -> LoopbackTLSServer {
        let log = ConnectionLog()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addTLSServerHandler(context: context)
                    try channel.pipeline.syncOperations.addHandler(RecordingHandler(log: log, behaviour: behaviour))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        return LoopbackTLSServer(channel: channel, log: log)
    }

    func stop() async {
        try? await self.channel.close()
    }
}

/// Connects a ``TLSHandler`` client with a ``RecordingHandler`` behind it to 127.0.0.1:`port`.
func connectTLSClient(
    port: Int,
    context: TLSContext,
    serverHostname: String?,
    log: ConnectionLog,
    autoRead: Bool = true,
    behaviour: RecordingHandler.Behaviour = .init()
) async throws -> any Channel {
    try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .channelOption(.autoRead, value: autoRead)
        .channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addTLSClientHandler(
                    context: context,
                    serverHostname: serverHostname
                )
                try channel.pipeline.syncOperations.addHandler(RecordingHandler(log: log, behaviour: behaviour))
            }
        }
        .connect(host: "127.0.0.1", port: port)
        .get()
}

extension Channel {
    /// Calls ``TLSHandler/approvePeer()`` on the channel's event loop.
    func approveTLSPeer() async throws {
        try await self.eventLoop.submit {
            try self.pipeline.syncOperations.handler(type: TLSHandler.self).approvePeer()
        }.get()
    }

    func send(_ text: String) async throws {
        try await self.writeAndFlush(ByteBuffer(string: text)).get()
    }
}

struct TimedOut: Error, CustomStringConvertible {
    var description: String
}

/// Polls `condition` every 10 ms until it holds; throws after `timeout`.
func waitUntil(
    _ what: String,
    timeout: Duration = .seconds(15),
    _ condition: () -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        guard ContinuousClock.now < deadline else { throw TimedOut(description: "timed out waiting until \(what)") }
        try await Task.sleep(for: .milliseconds(10))
    }
}

/// A port on 127.0.0.1 that was free a moment ago.
func freeLoopbackPort() async throws -> Int {
    let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .bind(host: "127.0.0.1", port: 0).get()
    let port = channel.localAddress!.port!
    try await channel.close()
    return port
}

/// A test PKI: a root CA and its PEM file in a temporary directory.
struct TestPKI {
    let ca: CertificateAuthority
    let directory: URL

    init(name: String = "Handler Test CA") throws {
        self.ca = try CertificateAuthority.create(commonName: name)
        self.directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("tollgate-tls-handler-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: self.directory, withIntermediateDirectories: true)
        try self.ca.certificate.pemString.write(to: self.caFile)
    }

    var caFile: URL { self.directory.appendingPathComponent("ca.pem") }

    /// Writes `identity` as `<name>.pem` (chain) and `<name>.key` in the directory; returns both paths.
    func write(_ identity: Identity, as name: String) throws -> (certificate: String, key: String) {
        let certificate = self.directory.appendingPathComponent("\(name).pem")
        let key = self.directory.appendingPathComponent("\(name).key")
        try identity.certificateChain.map(\.pemString).joined().write(to: certificate)
        try identity.privateKey.write(toPEMFile: key.path)
        return (certificate.path, key.path)
    }

    func remove() {
        try? FileManager.default.removeItem(at: self.directory)
    }

    /// A client context trusting only this CA.
    func clientContext(_ change: (inout TLSConfiguration) -> Void = { _ in }) throws -> TLSContext {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.trustRoots = .certificates([self.ca.certificate])
        change(&configuration)
        return try TLSContext(configuration: configuration)
    }

    /// A server context presenting a fresh leaf for `host` from this CA.
    func serverContext(
        host: String = "localhost",
        _ change: (inout TLSConfiguration) -> Void = { _ in }
    ) throws
        -> TLSContext
    {
        var configuration = TLSConfiguration.makeServerConfiguration(identity: try self.ca.issueLeaf(for: host))
        change(&configuration)
        return try TLSContext(configuration: configuration)
    }
}

/// An `openssl` command running in the background (`s_server`, `s_client`), its output collected.
final class OpenSSLProcess {
    private let process: ChildProcess

    /// Starts `openssl` with `arguments` in `directory`, its standard input a pipe (``send(_:)``).
    init(_ arguments: [String], in directory: URL) throws {
        self.process = try ChildProcess("/usr/bin/openssl", arguments, directory: directory.path, input: true)
    }

    /// Starts `openssl s_server` on a free loopback port and waits until it accepts connections.
    static func server(_ arguments: [String], in directory: URL) async throws -> (OpenSSLProcess, port: Int) {
        let port = try await freeLoopbackPort()
        let server = try OpenSSLProcess(["s_server", "-accept", "127.0.0.1:\(port)"] + arguments, in: directory)
        do {
            try await waitUntil("s_server listens") { server.output.contains("ACCEPT") || !server.isRunning }
            guard server.isRunning else {
                throw TimedOut(description: "s_server exited: \(server.errorOutput)")
            }
        } catch {
            server.stop()
            throw error
        }
        return (server, port)
    }

    var output: String { self.process.standardOutput }
    var errorOutput: String { self.process.standardError }
    var isRunning: Bool { self.process.isRunning }

    /// Writes `text` to the process's standard input (a child that has exited already is the
    /// test's failure to report: the write just fails).
    func send(_ text: String) {
        self.process.writeInput(text)
    }

    /// Closes its standard input.
    func closeInput() {
        self.process.closeInput()
    }

    /// Waits for it to exit by itself.
    func waitForExit(timeout: Duration = .seconds(15)) async throws {
        try await waitUntil("openssl exits") { !self.process.isRunning }
    }

    /// Kills it with SIGKILL: no TLS shutdown at all.
    func stop() {
        guard self.process.isRunning else { return }
        self.process.kill()
        _ = try? self.process.waitForExitBlocking(timeout: .seconds(10))
    }

    deinit {
        self.stop()
    }
}
