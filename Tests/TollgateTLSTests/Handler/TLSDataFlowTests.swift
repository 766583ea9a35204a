import Foundation
import NIOCore
import NIOPosix
import Testing
import TollgateTLS

@Suite("TLSHandler data flow", .timeLimit(.minutes(2)))
struct TLSDataFlowTests {
    @Test("several MiB go both ways through partial writes and come back intact")
    func largeBodies() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let server = try await LoopbackTLSServer.start(context: try pki.serverContext())
        let log = ConnectionLog()
        let client = try await connectTLSClient(
            port: server.port,
            context: try pki.clientContext(),
            serverHostname: "localhost",
            log: log
        )
        var body = [UInt8](repeating: 0, count: 6 * 1024 * 1024 + 12_345)
        for index in body.indices { body[index] = UInt8(truncatingIfNeeded: index &* 2_654_435_761 >> 7) }
        // Two writes and one flush: the write promise completes once the last ciphertext is written.
        let half = body.count / 2
        client.write(ByteBuffer(bytes: body[..<half]), promise: nil)
        try await client.writeAndFlush(ByteBuffer(bytes: body[half...])).get()
        try await waitUntil("the echo is complete", timeout: .seconds(60)) { log.received.count >= body.count }
        #expect(server.log.received.count == body.count)
        // Compared as Bools so that a failure does not print megabytes.
        let serverGotBody = server.log.received == body
        let clientGotBody = log.received == body
        #expect(serverGotBody)
        #expect(clientGotBody)
        // Many records came back in fewer, larger reads than writes.
        #expect(log.deliveries > 1)
        try await client.close()
        await server.stop()
    }

    @Test("with autoRead off, no plaintext arrives beyond what read() asked for")
    func backPressure() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let total = 4 * 1024 * 1024
        let server = try await LoopbackTLSServer.start(
            context: try pki.serverContext(),
            behaviour: .init(greeting: [UInt8](repeating: 0x61, count: total))
        )
        let log = ConnectionLog()
        let client = try await connectTLSClient(
            port: server.port,
            context: try pki.clientContext(),
            serverHostname: "localhost",
            log: log,
            autoRead: false
        )
        // The handshake reads for itself; the application has asked for nothing yet.
        try await waitUntil("the handshake completes") { log.handshake != nil }
        try await Task.sleep(for: .milliseconds(300))
        #expect(log.deliveries == 0)
        #expect(log.received.count == 0)

        // One read() → one delivery of at most what a socket read or two brought in.
        client.read()
        try await waitUntil("the first delivery") { log.deliveries == 1 }
        try await Task.sleep(for: .milliseconds(200))
        #expect(log.deliveries == 1)
        let first = log.received.count
        #expect(first > 0)
        #expect(first <= 256 * 1024)

        var reads = 1
        while log.received.count < total, reads < 10_000 {
            let before = log.deliveries
            client.read()
            reads += 1
            try await waitUntil("delivery \(before + 1)") { log.deliveries > before }
            #expect(log.deliveries == before + 1)
        }
        #expect(log.received.count == total)
        #expect(log.deliveries == reads)
        try await client.close()
        await server.stop()
    }

    @Test("a server that never answers fails the handshake after the timeout and is closed")
    func handshakeTimeout() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        // A TCP server that accepts and says nothing.
        let silent = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0).get()
        let log = ConnectionLog()
        let started = ContinuousClock.now
        let client = try await connectTLSClient(
            port: silent.localAddress!.port!,
            context: try pki.clientContext { $0.handshakeTimeout = .milliseconds(300) },
            serverHostname: "localhost",
            log: log
        )
        try await client.closeFuture.get()
        let elapsed = ContinuousClock.now - started
        #expect(elapsed >= .milliseconds(300))
        #expect(elapsed < .seconds(5))
        let error = try #require(log.tlsErrors.first)
        #expect(error == .handshakeTimeout)
        #expect(log.handshakes.isEmpty)
        try await silent.close()
    }
}
