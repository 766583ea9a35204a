import NIOCore
import NIOEmbedded
import Testing
import TollgateTLS

/// The TLS handler without sockets: a client and a server on two `EmbeddedChannel`s, whose
/// outbound ciphertext the test carries across by hand (nio-ssl's `interactInMemory`), so every
/// step of a real OpenSSL handshake and exchange runs on the test's thread, in order.
@Suite("TLSHandler on two EmbeddedChannels back to back")
struct TLSEmbeddedChannelTests {
    /// A client and a server channel, each a ``TLSHandler`` with a ``RecordingHandler`` behind it, both active.
    struct Pair {
        let client: EmbeddedChannel
        let server: EmbeddedChannel
        let clientLog = ConnectionLog()
        let serverLog = ConnectionLog()

        init(pki: TestPKI, serverBehaviour: RecordingHandler.Behaviour = .init(echo: true)) throws {
            client = EmbeddedChannel()
            server = EmbeddedChannel()
            try client.pipeline.syncOperations.addTLSClientHandler(context: try pki.clientContext(), serverHostname: "localhost")
            try client.pipeline.syncOperations.addHandler(RecordingHandler(log: clientLog))
            try server.pipeline.syncOperations.addTLSServerHandler(context: try pki.serverContext(host: "localhost"))
            try server.pipeline.syncOperations.addHandler(RecordingHandler(log: serverLog, behaviour: serverBehaviour))
            let address = try SocketAddress(ipAddress: "127.0.0.1", port: 443)
            try server.connect(to: address).wait()
            try client.connect(to: address).wait()
        }

        /// Carries ciphertext each way until neither side has anything more to send. Each round
        /// also asks both sides for a read, as a channel with auto-read would after each read
        /// (an EmbeddedChannel never reads by itself, and the handler hands plaintext over on reads).
        func interact() throws {
            var moved = true
            while moved {
                moved = false
                if client.isActive { client.read() }
                if server.isActive { server.read() }
                client.embeddedEventLoop.run()
                server.embeddedEventLoop.run()
                while let bytes = try client.readOutbound(as: ByteBuffer.self) {
                    moved = true
                    if server.isActive { try server.writeInbound(bytes) }
                }
                while let bytes = try server.readOutbound(as: ByteBuffer.self) {
                    moved = true
                    if client.isActive { try client.writeInbound(bytes) }
                }
            }
        }
    }

    @Test("A real handshake completes on both sides and data goes each way")
    func handshakeAndEcho() throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let pair = try Pair(pki: pki)
        try pair.interact()
        let evaluation = try #require(pair.clientLog.handshake?.evaluation)
        #expect(evaluation.trustResult == .trusted)
        #expect(evaluation.serverName == "localhost")
        #expect(pair.serverLog.handshake != nil)

        try pair.client.writeAndFlush(ByteBuffer(string: "hello over memory")).wait()
        try pair.interact()
        #expect(pair.serverLog.receivedText == "hello over memory")
        #expect(pair.clientLog.receivedText == "hello over memory")
        #expect(pair.clientLog.tlsErrors.isEmpty && pair.serverLog.tlsErrors.isEmpty)
    }

    @Test("A body of many records arrives intact, and a close from the client closes both sides cleanly")
    func largeBodyAndClose() throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let pair = try Pair(pki: pki, serverBehaviour: .init())
        try pair.interact()
        let body = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31 >> 3) }
        pair.client.write(ByteBuffer(bytes: body[..<70_000]), promise: nil)
        try pair.client.writeAndFlush(ByteBuffer(bytes: body[70_000...])).wait()
        try pair.interact()
        let intact = pair.serverLog.received == body  // a Bool, so that a failure does not print the body
        #expect(intact, "\(pair.serverLog.received.count) of \(body.count) bytes")

        let closed = pair.client.close()
        try pair.interact()
        pair.client.embeddedEventLoop.run()
        try closed.wait()
        #expect(!pair.client.isActive)
        #expect(!pair.server.isActive)
        #expect(pair.serverLog.tlsErrors.isEmpty)
    }

    @Test("A half-close is close_notify one way: the other side reads it as inputClosed and still writes; its own then closes both")
    func halfClose() throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let pair = try Pair(pki: pki, serverBehaviour: .init())
        try pair.server.setOption(ChannelOptions.allowRemoteHalfClosure, value: true).wait()
        try pair.interact()
        try pair.client.writeAndFlush(ByteBuffer(string: "question")).wait()
        let halfClosed = pair.client.close(mode: .output)
        try pair.interact()
        try halfClosed.wait()
        #expect(pair.serverLog.receivedText == "question")
        #expect(pair.serverLog.inputCloses == 1)
        #expect(pair.client.isActive && pair.server.isActive)
        #expect(throws: ChannelError.outputClosed) { try pair.client.writeAndFlush(ByteBuffer(string: "more")).wait() }

        // The half-closed side still reads; the other still writes.
        try pair.server.writeAndFlush(ByteBuffer(string: "answer")).wait()
        try pair.interact()
        #expect(pair.clientLog.receivedText == "answer")
        #expect(pair.client.isActive && pair.server.isActive)

        // The other half: each side has closed its own, and both channels close, cleanly.
        let serverHalf = pair.server.close(mode: .output)
        try pair.interact()
        pair.client.embeddedEventLoop.run()
        pair.server.embeddedEventLoop.run()
        try serverHalf.wait()
        #expect(!pair.client.isActive && !pair.server.isActive)
        #expect(pair.clientLog.inputCloses == 0, "the client did not allow half-closure: its channel closed instead")
        #expect(pair.clientLog.tlsErrors.isEmpty && pair.serverLog.tlsErrors.isEmpty)
        #expect(pair.serverLog.receivedText == "question")
    }

    @Test("Without half-closure allowed, the peer's close_notify closes the channel after what it carried")
    func closeNotifyWithoutHalfClosure() throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let pair = try Pair(pki: pki, serverBehaviour: .init())
        try pair.interact()
        try pair.client.writeAndFlush(ByteBuffer(string: "last words")).wait()
        pair.client.close(mode: .output, promise: nil)
        try pair.interact()
        pair.client.embeddedEventLoop.run()
        pair.server.embeddedEventLoop.run()
        #expect(pair.serverLog.receivedText == "last words")
        #expect(pair.serverLog.inputCloses == 0)
        #expect(!pair.server.isActive && !pair.client.isActive)
        #expect(pair.clientLog.tlsErrors.isEmpty && pair.serverLog.tlsErrors.isEmpty)
    }

    /// `count` bytes from a fixed-seed generator (the same bytes every run).
    static func noise(_ count: Int, seed: UInt64) -> [UInt8] {
        var state = seed
        return (0..<count).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: state >> 56)
        }
    }

    @Test(
        "Bytes that are not TLS, fed to a server, give a TLS error and a closed channel, no crash",
        arguments: [
            Array("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8),
            // A handshake record whose message is garbage.
            [0x16, 0x03, 0x01, 0x00, 0x08] + Array(repeating: 0xFF, count: 8),
            // An SSL 2 style hello.
            [0x80, 0x2E, 0x01, 0x00, 0x02] + Array(repeating: 0x00, count: 43),
            [UInt8](repeating: 0, count: 64),
            [0x17] + noise(300, seed: 1),
            noise(1024, seed: 42),
        ]
    )
    func garbageToServer(bytes: [UInt8]) throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let server = EmbeddedChannel()
        let log = ConnectionLog()
        try server.pipeline.syncOperations.addTLSServerHandler(context: try pki.serverContext())
        try server.pipeline.syncOperations.addHandler(RecordingHandler(log: log))
        try server.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
        try server.writeInbound(ByteBuffer(bytes: bytes))
        server.embeddedEventLoop.run()
        #expect(!log.tlsErrors.isEmpty, "errors: \(log.tlsErrors) \(log.otherErrors)")
        #expect(!server.isActive)
        #expect(log.received.isEmpty)
        #expect(log.handshake == nil)
    }

    @Test("Garbage after the handshake is a TLS error on the receiving side, which closes")
    func garbageAfterHandshake() throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let pair = try Pair(pki: pki)
        try pair.interact()
        try pair.server.writeInbound(ByteBuffer(bytes: [0x17, 0x03, 0x03, 0x00, 0x10] + Self.noise(16, seed: 7)))
        pair.server.embeddedEventLoop.run()
        #expect(!pair.serverLog.tlsErrors.isEmpty)
        #expect(!pair.server.isActive)
        #expect(pair.serverLog.received.isEmpty)
    }
}
