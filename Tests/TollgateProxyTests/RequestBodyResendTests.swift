import Foundation
import Testing
import TollgateHTTP
import TollgatePolicy
import TollgateProxy
import TollgateSession
import TollgateTesting

/// A body the session must send again — to a 307's target, with a credential after a 401 — is
/// sent again when it was kept (256 KiB in memory, the rest in a temporary file, up to
/// `limits.resendable-body`); a larger one leaves the 307 or 401 to the client.
@Suite("Request bodies sent again: a followed 307, an answered 401", .timeLimit(.minutes(1)))
struct RequestBodyResendTests {
    /// `curl` POSTing `size` bytes from a file through `proxy`; its output is the status line's
    /// code, then the body.
    private func post(_ size: Int, to url: String, through port: Int) async throws -> (status: String, body: String) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("resend-\(UUID().uuidString)")
        try Data((0..<size).map { UInt8(ascii: "a") + UInt8($0 % 26) }).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try await ChildProcess.run(
            "/usr/bin/curl",
            [
                "-s", "--noproxy", "", "-x", "http://127.0.0.1:\(port)", "-H", "Expect:", "--data-binary",
                "@\(file.path)",
                "-w", "\n%{http_code}", url,
            ]
        )
        #expect(result.status == 0, "curl failed: \(result.stderr)")
        let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        return (String(lines.last ?? ""), lines.dropLast().joined(separator: "\n"))
    }

    private func body(_ size: Int) -> String {
        String(decoding: (0..<size).map { UInt8(ascii: "a") + UInt8($0 % 26) }, as: UTF8.self)
    }

    /// An origin that redirects `POST /a` to `/b` with 307 and answers `/b` with the body's length
    /// and its first bytes.
    private func redirectingOrigin() async throws -> LoopbackOrigin {
        try await LoopbackOrigin.start { request, respond in
            if request.path == "/a" {
                respond.send(status: 307, headers: ["Location": "/b"], body: "moved")
            } else {
                respond.send(
                    status: 200,
                    body: "\(request.method) \(request.path) \(request.body.count) \(request.bodyText.prefix(8))"
                )
            }
        }
    }

    /// A proxy whose session follows redirects and answers challenges from its credential storage
    /// (no delegate), as a rule with `redirects: follow` and `credentials` does.
    private func withFollowingProxy(
        credential: (ProtectionSpace, Credential)? = nil,
        resendableBody: Int64? = nil,
        _ body: (Int) async throws -> Void
    ) async throws {
        var configuration = SessionConfiguration.ephemeral
        configuration.credentialStorage = CredentialStorage()
        if let (space, credential) = credential { configuration.credentialStorage?.set(credential, for: space) }
        let session = Session(configuration: configuration)
        defer { session.invalidateAndCancel() }
        var policyConfiguration = PolicyConfiguration()
        if let resendableBody { policyConfiguration.limits.resendableBody = resendableBody }
        let server = try await ProxyServer.start(
            .init(listen: ListenAddress(host: "127.0.0.1", port: 0), accessLog: .off),
            policy: StaticProxyPolicy(session: session, configuration: policyConfiguration)
        )
        do {
            try await body(server.boundAddress.port)
        } catch {
            await server.shutdown(gracePeriod: .seconds(1))
            throw error
        }
        await server.shutdown(gracePeriod: .seconds(1))
    }

    /// ``withFollowingProxy(credential:_:)`` whose storage answers `origin`'s Basic realm `r` as `u:p`.
    private func withFollowingProxy(
        credentialFor origin: LoopbackOrigin,
        resendableBody: Int64? = nil,
        _ body: (Int) async throws -> Void
    ) async throws {
        let space = ProtectionSpace(
            host: "127.0.0.1",
            port: origin.port,
            protocol: "http",
            realm: "r",
            authenticationMethod: .httpBasic
        )
        try await withFollowingProxy(
            credential: (space, Credential(user: "u", password: "p", persistence: .forSession)), resendableBody: resendableBody,
            body
        )
    }

    @Test("A POST redirected with 307 reaches the new target with its whole body: small, up to 256 KiB (in memory), and 5 MB (in a temporary file, gone afterwards)")
    func redirectWithBody() async throws {
        let origin = try await redirectingOrigin()
        defer { origin.stop() }
        let spoolFiles = { (try? FileManager.default.contentsOfDirectory(atPath: "/tmp"))?.filter { $0.hasPrefix("tollgate-body-") } ?? [] }
        let before = spoolFiles()
        try await withFollowingProxy { port in
            for size in [5, 200_000, 5_000_000] {
                let answer = try await post(size, to: "http://127.0.0.1:\(origin.port)/a", through: port)
                #expect(answer.status == "200")
                #expect(answer.body == "POST /b \(size) \(body(size).prefix(8))")
            }
            let toB = origin.requests.filter { $0.path == "/b" }
            #expect(toB.count == 3)
            #expect(toB.dropLast().last.map { $0.bodyText == body(200_000) } == true)
            #expect(toB.last.map { $0.bodyText == body(5_000_000) } == true, "byte for byte, from the file")
        }
        #expect(spoolFiles() == before, "the spool file was unlinked when made")
    }

    @Test("A POST body over limits.resendable-body is not kept: the 307 goes to the client, and the new target sees nothing")
    func redirectWithLargeBody() async throws {
        let origin = try await redirectingOrigin()
        defer { origin.stop() }
        try await withFollowingProxy(resendableBody: 1_000_000) { port in
            let answer = try await post(1_500_000, to: "http://127.0.0.1:\(origin.port)/a", through: port)
            #expect(answer.status == "307")
            #expect(answer.body == "moved")
            #expect(origin.requests.map(\.path) == ["/a"])
            #expect(origin.requests.first?.body.count == 1_500_000)
            // Under the limit, past the memory part: kept in the file and sent again.
            let kept = try await post(900_000, to: "http://127.0.0.1:\(origin.port)/a", through: port)
            #expect(kept.status == "200" && kept.body == "POST /b 900000 \(body(900_000).prefix(8))")
        }
    }

    @Test(
        "A 401 answered with the session's credential gets the POST's body again; once the space authenticated, a large body goes with Basic at once"
    )
    func challengeWithBody() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in
            if request.headerFields["Authorization"] == "Basic dTpw" {
                respond.send(status: 200, body: "in \(request.body.count)")
            } else {
                respond.send(status: 401, headers: ["WWW-Authenticate": "Basic realm=\"r\""], body: "who?")
            }
        }
        defer { origin.stop() }
        try await withFollowingProxy(credentialFor: origin) { port in
            let small = try await post(1_000, to: "http://127.0.0.1:\(origin.port)/upload", through: port)
            #expect(small.status == "200")
            #expect(small.body == "in 1000")
            #expect(origin.requests.map(\.body.count) == [1_000, 1_000])
            // The space authenticated: Basic now goes with the first request (no 401, no resend).
            let large = try await post(300_000, to: "http://127.0.0.1:\(origin.port)/other/upload", through: port)
            #expect(large.status == "200")
            #expect(origin.requestCount == 3)
        }
    }

    @Test("Over limits.resendable-body and before the space authenticated, the 401 goes to the client; the body went once. Under it, a 2 MB body is sent again with the credential")
    func challengeWithLargeBody() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in
            if request.headerFields["Authorization"] == "Basic dTpw" {
                respond.send(status: 200, body: "in \(request.body.count)")
            } else {
                respond.send(status: 401, headers: ["WWW-Authenticate": "Basic realm=\"r\""], body: "who?")
            }
        }
        defer { origin.stop() }
        try await withFollowingProxy(credentialFor: origin, resendableBody: 1_000_000) { port in
            let answer = try await post(1_500_000, to: "http://127.0.0.1:\(origin.port)/upload", through: port)
            #expect(answer.status == "401")
            #expect(answer.body == "who?")
            #expect(origin.requestCount == 1)
        }
        try await withFollowingProxy(credentialFor: origin) { port in
            let answer = try await post(2_000_000, to: "http://127.0.0.1:\(origin.port)/upload2", through: port)
            #expect(answer.status == "200" && answer.body == "in 2000000", "\(answer)")
            #expect(origin.requests.suffix(2).map(\.body.count) == [2_000_000, 2_000_000])
        }
    }
}
