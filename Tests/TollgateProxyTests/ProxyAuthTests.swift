import Foundation
import NIOCore
import Testing
import TollgateHTTP
import TollgatePolicy
import TollgateProxy
import TollgateTesting

@Suite("Proxy authentication (Basic)", .timeLimit(.minutes(1)))
struct ProxyAuthTests {
    /// A configuration with user `ci`, whose password file has `mode`.
    private func configuration(password: String = "s3cret", mode: Int = 0o600) throws -> (PolicyConfiguration, URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "tollgate-auth-\(UUID().uuidString)"
        )
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("ci.pass")
        try Data((password + "\n").utf8).write(to: file)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: file.path)
        var configuration = PolicyConfiguration()
        configuration.access.users = [.init(name: "ci", passwordFile: file.path)]
        configuration.access.connectPorts = [443, 1]
        return (configuration, directory)
    }

    @Test("Without credentials: 407 with Proxy-Authenticate; with them: served, and they are not forwarded")
    func challengeAndAccept() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "ok") }
        defer { origin.stop() }
        let (configuration, directory) = try configuration()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withProxy(configuration: configuration) { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            try await client.send("GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\n\r\n")
            let challenge = try #require(try await client.waitForResponses(1).first)
            #expect(challenge.status == 407)
            #expect(challenge.header("Proxy-Authenticate") == "Basic realm=\"tollgate\", charset=\"UTF-8\"")
            #expect(challenge.header("Tollgate-Error") == "proxy-auth-required")
            // Wrong password on the same connection (it stays open after a 407).
            let wrong = Data("ci:guess".utf8).base64EncodedString()
            try await client.send(
                "GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\nProxy-Authorization: Basic \(wrong)\r\n\r\n"
            )
            #expect(try await client.waitForResponses(2).last?.status == 407)
            #expect(origin.requestCount == 0)

            let result = try await ChildProcess.run(
                "/usr/bin/curl",
                [
                    "-sS", "-x", "http://127.0.0.1:\(proxy.port)", "--proxy-user", "ci:s3cret",
                    "http://127.0.0.1:\(origin.port)/",
                ]
            )
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout == "ok")
            #expect(origin.requests.first?.headerFields["Proxy-Authorization"] == nil)
        }
    }

    @Test("CONNECT without credentials gets 407 too")
    func connectNeedsCredentials() async throws {
        let (configuration, directory) = try configuration()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withProxy(configuration: configuration) { proxy in
            let client = try await RawClient.connect(port: proxy.port)
            defer { client.close() }
            try await client.send("CONNECT 127.0.0.1:443 HTTP/1.1\r\nHost: x\r\n\r\n")
            try await client.waitForClose()
            #expect(client.responses.first?.status == 407)
        }
    }

    @Test("A password file readable by others is refused: the server does not start")
    func looseFileRefused() async throws {
        let (configuration, directory) = try configuration(mode: 0o644)
        defer { try? FileManager.default.removeItem(at: directory) }
        await #expect {
            _ = try await ProxyFixture.start(configuration: configuration)
        } throws: { error in
            "\(error)".contains("chmod 600")
        }
    }
}
