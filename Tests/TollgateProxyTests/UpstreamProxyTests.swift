import Foundation
import NIOCore
import Testing
import TollgateHTTP
import TollgatePolicy
import TollgateProxy
import TollgateSession
import TollgateTesting
import TollgateTLS

/// A session whose `upstreamProxy` is a Tollgate forward proxy (the parent), started by the test.
@Suite("Sessions through an upstream proxy", .timeLimit(.minutes(1)))
struct UpstreamProxyTests {
    private func makeSession(through parent: ProxyFixture, trusting pki: TestPKI?) -> Session {
        var configuration = SessionConfiguration.ephemeral
        configuration.upstreamProxy = UpstreamProxy(host: "127.0.0.1", port: parent.port)
        configuration.tlsConfiguration = pki?.sessionTLSConfiguration
        return Session(configuration: configuration)
    }

    private func allowingConnect(to port: Int) -> PolicyConfiguration {
        var configuration = PolicyConfiguration()
        configuration.access.connectPorts = [port]
        return configuration
    }

    @Test("http goes to the parent in absolute form")
    func plainHTTP() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in respond.send(status: 200, body: "via \(request.target)") }
        defer { origin.stop() }
        try await withProxy { parent in
            let session = makeSession(through: parent, trusting: nil)
            defer { session.invalidateAndCancel() }
            let (body, _) = try await session.data(for: Request(url: origin.url("/plain")))
            #expect(String(buffer: body) == "via /plain")
            try await eventually("the parent's log line") { !parent.accessLog.isEmpty }
            #expect(parent.accessLog.first?.contains("\"GET http://127.0.0.1:\(origin.port)/plain HTTP/1.1\" 200") == true)
        }
    }

    @Test("https goes through a CONNECT tunnel: the origin's certificate is verified and the tunnel is reused")
    func httpsThroughTunnel() async throws {
        let pki = try TestPKI()
        let origin = try await LoopbackOrigin.start(tls: pki.serverConfiguration) { request, respond in
            respond.send(status: 200, body: "secret \(request.target)")
        }
        defer { origin.stop() }
        try await withProxy(configuration: allowingConnect(to: origin.port)) { parent in
            let session = makeSession(through: parent, trusting: pki)
            defer { session.invalidateAndCancel() }
            let (first, _) = try await session.data(for: Request(url: origin.url("/a")))
            #expect(String(buffer: first) == "secret /a")
            let (second, _) = try await session.data(for: Request(url: origin.url("/b")))
            #expect(String(buffer: second) == "secret /b")
            #expect(origin.connectionCount == 1)
            #expect(origin.requests.map(\.target) == ["/a", "/b"])  // origin-form inside the tunnel
            // The tunnel went through the parent: its CONNECT is logged once the tunnel closes.
            session.invalidateAndCancel()
            try await eventually("the parent logs the CONNECT") {
                parent.accessLog.contains { $0.contains("\"CONNECT 127.0.0.1:\(origin.port) HTTP/1.1\" 200") }
            }

            // A chain the session does not trust fails as untrusted, through the tunnel too.
            let untrusting = makeSession(through: parent, trusting: nil)
            defer { untrusting.invalidateAndCancel() }
            await #expect(throws: SessionError(.serverCertificateUntrusted)) {
                _ = try await untrusting.data(for: Request(url: origin.url("/c")))
            }
        }
    }

    @Test("A parent that refuses the CONNECT fails the task with its status line")
    func refusedConnect() async throws {
        let pki = try TestPKI()
        let origin = try await LoopbackOrigin.start(tls: pki.serverConfiguration) { _, respond in respond.send(status: 200) }
        defer { origin.stop() }
        try await withProxy { parent in  // CONNECT to 443 only
            let session = makeSession(through: parent, trusting: pki)
            defer { session.invalidateAndCancel() }
            await #expect {
                _ = try await session.data(for: Request(url: origin.url("/")))
            } throws: { error in
                guard let error = error as? SessionError else { return false }
                return error.code == .cannotConnectToHost && "\(error)".contains("refused CONNECT 127.0.0.1:\(origin.port): HTTP/1.1 403")
            }
            #expect(origin.connectionCount == 0)
        }
    }

    @Test("A stream task opens its tunnel through the parent, by name, and bytes flow both ways")
    func streamTaskThroughParent() async throws {
        let echo = try await LoopbackEchoServer.start()
        defer { echo.stop() }
        try await withProxy(configuration: allowingConnect(to: echo.port)) { parent in
            let session = makeSession(through: parent, trusting: nil)
            defer { session.invalidateAndCancel() }
            let task = try session.streamTask(withHostName: "localhost", port: echo.port)
            task.resume()
            try await write("ping through the parent", to: task)
            #expect(try await read(from: task, atLeast: 23) == "ping through the parent")
            task.cancel()
            try await eventually("the parent logs the CONNECT") {
                parent.accessLog.contains { $0.contains("\"CONNECT localhost:\(echo.port) HTTP/1.1\" 200") }
            }
            #expect(echo.receivedBytes == Array("ping through the parent".utf8))
        }
    }

    @Test("A stream task the parent refuses fails with the parent's status line, and reaches nothing")
    func streamTaskRefusedByParent() async throws {
        let echo = try await LoopbackEchoServer.start()
        defer { echo.stop() }
        try await withProxy { parent in  // CONNECT to 443 only
            let session = makeSession(through: parent, trusting: nil)
            defer { session.invalidateAndCancel() }
            let task = try session.streamTask(withHostName: "127.0.0.1", port: echo.port)
            task.resume()
            await #expect {
                try await read(from: task, atLeast: 1)
            } throws: { error in
                "\(error)".contains("refused CONNECT 127.0.0.1:\(echo.port): HTTP/1.1 403")
            }
            #expect(echo.receivedBytes.isEmpty)
        }
    }

    private func write(_ text: String, to task: StreamTask) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            task.write(ByteBuffer(string: text), timeout: .seconds(5)) { error in
                if let error { continuation.resume(throwing: error) } else { continuation.resume() }
            }
        }
    }

    private func read(from task: StreamTask, atLeast count: Int) async throws -> String {
        try await withCheckedThrowingContinuation { continuation in
            task.readData(ofMinLength: count, maxLength: 65_536, timeout: .seconds(5)) { bytes, _, error in
                if let error {
                    continuation.resume(throwing: error)
                } else {
                    continuation.resume(returning: bytes.map { String(buffer: $0) } ?? "")
                }
            }
        }
    }
}
