import Foundation
import NIOCore
import Testing
import TollgateHTTP
import TollgatePolicy
import TollgateProxy
import TollgateSession
import TollgateTesting
import TollgateTLS

/// A session whose upstream proxy (a running Tollgate with `access.users`) answers 407 until the
/// session's ``SessionConfiguration/upstreamProxyCredential`` is sent.
@Suite("Sessions answering the upstream proxy's 407", .serialized, .timeLimit(.minutes(1)))
struct UpstreamProxyAuthenticationTests {
    /// A parent with user `ci` (password `s3cret`, file mode 0600) that may CONNECT to `ports`.
    private func withAuthenticatingParent(connectPorts ports: [Int], _ body: (ProxyFixture) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-parent-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("ci.pass")
        try Data("s3cret\n".utf8).write(to: file)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
        var configuration = PolicyConfiguration()
        configuration.access.users = [.init(name: "ci", passwordFile: file.path)]
        configuration.access.connectPorts = ports
        try await withProxy(configuration: configuration, body)
    }

    private func session(through parent: ProxyFixture, password: String?, trusting pki: TestPKI? = nil) -> Session {
        var configuration = SessionConfiguration.ephemeral
        configuration.upstreamProxy = UpstreamProxy(host: "127.0.0.1", port: parent.port)
        configuration.upstreamProxyCredential = password.map { Credential(user: "ci", password: $0, persistence: .forSession) }
        configuration.tlsConfiguration = pki?.sessionTLSConfiguration
        return Session(configuration: configuration)
    }

    @Test("A plain request answered 407 goes once more with Proxy-Authorization; later ones carry it from the start")
    func plainRequestRetriedOnce() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in
            respond.send(status: 200, body: "via \(request.target) auth=\(request.headerFields["Proxy-Authorization"] ?? "none")")
        }
        defer { origin.stop() }
        try await withAuthenticatingParent(connectPorts: []) { parent in
            let session = session(through: parent, password: "s3cret")
            defer { session.invalidateAndCancel() }
            let (body, response) = try await session.data(for: Request(url: origin.url("/one")))
            #expect(response.status == 200)
            // The parent took the credential off (hop-by-hop): the origin never sees it.
            #expect(String(buffer: body) == "via /one auth=none")
            try await eventually("the parent's log lines") { parent.accessLog.count >= 2 }
            #expect(parent.accessLog[0].contains("\"GET http://127.0.0.1:\(origin.port)/one HTTP/1.1\" 407"))
            #expect(parent.accessLog[1].contains("\"GET http://127.0.0.1:\(origin.port)/one HTTP/1.1\" 200"))
            // The secret is in no log line and in no task's request.
            #expect(!parent.accessLog.joined().contains("czNjcmV0"))
            let (second, _) = try await session.data(for: Request(url: origin.url("/two")))
            #expect(String(buffer: second) == "via /two auth=none")
            try await eventually("the third log line") { parent.accessLog.count >= 3 }
            #expect(parent.accessLog.count == 3)  // no second 407: sent from the start
            #expect(origin.requests.map(\.target) == ["/one", "/two"])
        }
    }

    @Test("A refused credential is not sent again: the 407 is the task's response")
    func wrongPasswordGivesThe407() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "never") }
        defer { origin.stop() }
        try await withAuthenticatingParent(connectPorts: []) { parent in
            let session = session(through: parent, password: "wrong")
            defer { session.invalidateAndCancel() }
            let (_, response) = try await session.data(for: Request(url: origin.url("/x")))
            #expect(response.status == 407)
            try await eventually("two log lines") { parent.accessLog.count >= 2 }
            #expect(parent.accessLog.count == 2)  // the first, and the one retry
            #expect(origin.requestCount == 0)
        }
    }

    @Test("Without a credential the 407 is the task's response, asked once")
    func noCredential() async throws {
        try await withAuthenticatingParent(connectPorts: []) { parent in
            let session = session(through: parent, password: nil)
            defer { session.invalidateAndCancel() }
            let (_, response) = try await session.data(for: Request(url: HTTPURL(string: "http://127.0.0.1:1/")!))
            #expect(response.status == 407)
            try await eventually("the log line") { parent.accessLog.count >= 1 }
            try await Task.sleep(for: .milliseconds(100))
            #expect(parent.accessLog.count == 1)
        }
    }

    @Test("An https task's CONNECT answered 407 is sent again with the credential on the same connection")
    func connectAnswered() async throws {
        let pki = try TestPKI()
        let origin = try await LoopbackOrigin.start(tls: pki.serverConfiguration) { request, respond in
            respond.send(status: 200, body: "secret \(request.target)")
        }
        defer { origin.stop() }
        try await withAuthenticatingParent(connectPorts: [origin.port]) { parent in
            let session = session(through: parent, password: "s3cret", trusting: pki)
            defer { session.invalidateAndCancel() }
            let (body, _) = try await session.data(for: Request(url: origin.url("/tunnelled")))
            #expect(String(buffer: body) == "secret /tunnelled")
            session.invalidateAndCancel()
            try await eventually("the parent logs the CONNECT") {
                parent.accessLog.contains { $0.contains("\"CONNECT 127.0.0.1:\(origin.port) HTTP/1.1\" 200") }
            }
            #expect(parent.accessLog.contains { $0.contains("\"CONNECT 127.0.0.1:\(origin.port) HTTP/1.1\" 407") })
        }
    }

    @Test("A wrong credential fails the CONNECT with the parent's 407 and says the credential was refused")
    func connectRefused() async throws {
        let pki = try TestPKI()
        let origin = try await LoopbackOrigin.start(tls: pki.serverConfiguration) { _, respond in respond.send(status: 200) }
        defer { origin.stop() }
        try await withAuthenticatingParent(connectPorts: [origin.port]) { parent in
            let session = session(through: parent, password: "wrong", trusting: pki)
            defer { session.invalidateAndCancel() }
            await #expect {
                _ = try await session.data(for: Request(url: origin.url("/")))
            } throws: { error in
                guard let error = error as? SessionError else { return false }
                return error.code == .cannotConnectToHost && "\(error)".contains("407")
                    && "\(error)".contains("upstream-proxy-credentials were not accepted")
                    && !"\(error)".contains("wrong")
            }
            #expect(origin.connectionCount == 0)
        }
    }

    @Test("A stream task's CONNECT answers the 407, and bytes flow")
    func streamTaskAnswers() async throws {
        let echo = try await LoopbackEchoServer.start()
        defer { echo.stop() }
        try await withAuthenticatingParent(connectPorts: [echo.port]) { parent in
            let session = session(through: parent, password: "s3cret")
            defer { session.invalidateAndCancel() }
            let task = try session.streamTask(withHostName: "localhost", port: echo.port)
            task.resume()
            try await task.write(ByteBuffer(string: "hello"), timeout: .seconds(5))
            let read = try await task.readData(ofMinLength: 5, maxLength: 100, timeout: .seconds(5))
            #expect(read.data.map { String(buffer: $0) } == "hello")
            task.cancel()
            try await eventually("the parent logs both CONNECTs") {
                parent.accessLog.contains { $0.contains("\"CONNECT localhost:\(echo.port) HTTP/1.1\" 200") }
            }
            #expect(parent.accessLog.contains { $0.contains("\"CONNECT localhost:\(echo.port) HTTP/1.1\" 407") })
        }
    }
}
