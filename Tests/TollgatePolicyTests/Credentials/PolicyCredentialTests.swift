import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing
import TollgateCache
import TollgateHTTP
import TollgatePolicy
import TollgateSession
import TollgateTesting

/// An origin demanding Basic or Digest (SHA-256, qop=auth) for realm "Restricted", user alice.
final class CheckingOrigin: Sendable {
    let origin: LoopbackOrigin
    let outcomes = NIOLockedValueBox<[String]>([])

    init(origin: LoopbackOrigin) { self.origin = origin }

    static func start(password: String, digest: Bool) async throws -> CheckingOrigin {
        let box = NIOLockedValueBox<CheckingOrigin?>(nil)
        let origin = try await LoopbackOrigin.start { request, respond in
            let outcome = check(request, password: password, digest: digest)
            box.withLockedValue { $0?.outcomes.withLockedValue { $0.append(outcome) } }
            if outcome == "ok" {
                respond.send(status: 200, body: "welcome")
            } else {
                let challenge =
                    digest
                    ? #"Digest realm="Restricted", nonce="\#(UUID().uuidString)", algorithm=SHA-256, qop="auth""#
                    : #"Basic realm="Restricted""#
                respond.send(status: 401, headers: ["WWW-Authenticate": challenge], body: "denied")
            }
        }
        let made = CheckingOrigin(origin: origin)
        box.withLockedValue { $0 = made }
        return made
    }

    private static func check(_ request: RecordedRequest, password: String, digest: Bool) -> String {
        guard let authorization = request.headerFields["Authorization"] else { return "challenge" }
        if !digest {
            return authorization == "Basic " + Data("alice:\(password)".utf8).base64EncodedString() ? "ok" : "refused"
        }
        guard let fields = AuthenticationHeader.challenges(in: [authorization]).first?.parameters,
            let nonce = fields["nonce"], let nc = fields["nc"], let cnonce = fields["cnonce"],
            fields["username"] == "alice"
        else { return "refused" }
        let sha: (String) -> String = { SHA256.hex(SHA256.hash(Array($0.utf8))) }
        let expected = sha(
            "\(sha("alice:Restricted:\(password)")):\(nonce):\(nc):\(cnonce):auth:\(sha("\(request.method):\(request.target)"))"
        )
        return fields["response"] == expected ? "ok" : "refused"
    }

    var requestCount: Int { origin.requestCount }
    func stop() { origin.stop() }
}

@Suite("The policy answers challenges from the rules' credentials and the store", .timeLimit(.minutes(1)))
struct PolicyCredentialTests {
    static func passwordFile(_ directory: String, _ name: String, _ content: String) throws -> String {
        let path = directory + "/" + name
        try content.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static func challenge(
        realm: String? = "Restricted",
        method: ProtectionSpace.AuthenticationMethod = .httpBasic,
        port: Int = 443,
        failures: Int = 0,
        proposed: Credential? = nil
    ) -> AuthenticationChallenge {
        AuthenticationChallenge(
            protectionSpace: ProtectionSpace(
                host: "api.example.com",
                port: port,
                protocol: "https",
                realm: realm,
                authenticationMethod: method
            ),
            previousFailureCount: failures,
            proposedCredential: proposed
        )
    }

    static func delegate(_ yaml: String) throws -> PolicySessionDelegate {
        PolicySessionDelegate(sessionName: "default", decisions: PolicyDecisions(configuration: try Fixture.load(yaml)))
    }

    static let rules = """
        hosts:
          - match: "api.example.com"
            credentials:
              - { realm: "Admin", user: root, password-env: ROOT_PASS }
              - { realm: "Restricted", user: alice, password-env: ALICE_PASS, persistence: permanent }
              - { user: fallback, password-env: FALLBACK_PASS, persistence: none }
          - match: "other.example.com"
            credentials:
              - { user: nobody, password-env: NOBODY_PASS }
        """

    static let environment = ["ROOT_PASS": "r00t", "ALICE_PASS": "alice-pw", "FALLBACK_PASS": "fb-pw"]

    @Test("The first credential of the host's rule whose realm matches (or names none) answers, with its persistence")
    func ruleCredentialAnswers() throws {
        let delegate = try Self.delegate(Self.rules)
        let read: (HostRule.Credential.PasswordSource) -> String? = { $0.readPassword(environment: Self.environment) }
        let alice = delegate.credential(answering: Self.challenge(), readPassword: read)
        #expect(alice == Credential(user: "alice", password: "alice-pw", persistence: .permanent))
        let digest = delegate.credential(answering: Self.challenge(method: .httpDigest), readPassword: read)
        #expect(digest?.user == "alice")
        #expect(delegate.credential(answering: Self.challenge(realm: "Admin"), readPassword: read)?.user == "root")
        let fallback = delegate.credential(answering: Self.challenge(realm: "Elsewhere"), readPassword: read)
        #expect(fallback == Credential(user: "fallback", password: "fb-pw", persistence: .none))
        #expect(delegate.credential(answering: Self.challenge(method: .serverTrust), readPassword: read) == nil)
        #expect(delegate.credential(answering: Self.challenge(method: .ntlm), readPassword: read) == nil)
    }

    @Test("After a failure the refused credential is skipped; an unreadable password is skipped; no rule, no answer")
    func afterFailure() throws {
        let delegate = try Self.delegate(Self.rules)
        let read: (HostRule.Credential.PasswordSource) -> String? = { $0.readPassword(environment: Self.environment) }
        let refused = Credential(user: "alice", password: "alice-pw", persistence: .permanent)
        let next = delegate.credential(answering: Self.challenge(failures: 1, proposed: refused), readPassword: read)
        #expect(next?.user == "fallback")
        // The file changed since: the new password is worth a try.
        let stale = Credential(user: "alice", password: "old-pw", persistence: .permanent)
        #expect(
            delegate.credential(answering: Self.challenge(failures: 1, proposed: stale), readPassword: read)?.user
                == "alice"
        )
        let noAlice = delegate.credential(
            answering: Self.challenge(),
            readPassword: { $0.readPassword(environment: ["FALLBACK_PASS": "x"]) }
        )
        #expect(noAlice?.user == "fallback")
        #expect(delegate.credential(answering: Self.challenge(realm: "Admin"), readPassword: { _ in nil }) == nil)
        let unmatched = AuthenticationChallenge(
            protectionSpace: ProtectionSpace(
                host: "unknown.test",
                port: 80,
                protocol: "http",
                realm: "R",
                authenticationMethod: .httpBasic
            )
        )
        #expect(delegate.credential(answering: unmatched, readPassword: read) == nil)
    }

    @Test("Passwords come from the variable, or the first line of the file without its line ending")
    func passwordSources() throws {
        let directory = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let crlf = try Self.passwordFile(directory, "crlf", "first line\r\nsecond\n")
        #expect(HostRule.Credential.PasswordSource.file(crlf).readPassword() == "first line")
        let lf = try Self.passwordFile(directory, "lf", "only\n")
        #expect(HostRule.Credential.PasswordSource.file(lf).readPassword() == "only")
        let empty = try Self.passwordFile(directory, "empty", "\n")
        #expect(HostRule.Credential.PasswordSource.file(empty).readPassword() == nil)
        #expect(HostRule.Credential.PasswordSource.file(directory + "/missing").readPassword() == nil)
        #expect(HostRule.Credential.PasswordSource.environment("X").readPassword(environment: ["X": "v"]) == "v")
        #expect(HostRule.Credential.PasswordSource.environment("X").readPassword(environment: [:]) == nil)
    }

    @Test("Explain and the decision name where a password comes from, never the password")
    func explainHasNoSecret() throws {
        let directory = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = try Self.passwordFile(directory, "pw", "hunter2\n")
        let configuration = try Fixture.load(
            """
            hosts:
              - match: "api.example.com"
                credentials: [{ realm: R, user: alice, password-file: "\(file)" }]
            """
        )
        let decisions = PolicyDecisions(configuration: configuration)
        let lines = decisions.explain(try #require(HTTPURL(string: "https://api.example.com/")))
        #expect(lines.contains("alice"))
        #expect(lines.contains(file))
        #expect(!lines.contains("hunter2"))
    }

    static func yaml(port: Int, file: String, persistence: String, kind: String = "default") -> String {
        """
        sessions:
          default:
            configuration: \(kind)
        hosts:
          - match: "127.0.0.1:\(port)"
            credentials:
              - { realm: "Restricted", user: alice, password-file: "\(file)", persistence: \(persistence) }
        """
    }

    @Test(
        "End to end: the rule's credential answers Basic and Digest; permanent lands in LMDB and survives a restart",
        arguments: [false, true]
    )
    func endToEndPermanent(digest: Bool) async throws {
        let directory = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = try Self.passwordFile(directory, "pw", "s3cret\n")
        let server = try await CheckingOrigin.start(password: "s3cret", digest: digest)
        defer { server.stop() }
        let data = directory + "/data"
        do {
            let stores = try CookieCredentialStores(directory: data)
            let runtime = PolicyRuntime(
                configuration: try Fixture.load(
                    Self.yaml(port: server.origin.port, file: file, persistence: "permanent")
                ),
                sourceFile: nil,
                stores: stores
            )
            let route = runtime.route(server.origin.url("/x"))
            let (body, response) = try await route.session.data(for: Request(url: server.origin.url("/x")))
            #expect(response.status == 200)
            #expect(String(buffer: body) == "welcome")
            #expect(server.outcomes.withLockedValue { $0 } == ["challenge", "ok"])
            // Basic: the next request goes preemptively.
            _ = try await route.session.data(for: Request(url: server.origin.url("/y")))
            #expect(server.requestCount == (digest ? 4 : 3))
            runtime.shutdown()
            stores.close()
        }
        // Restart: the credential is in the store, found by default handling without a rule.
        let store = try CredentialStore.open(directory: CookieCredentialStores.credentialsDirectory(in: data))
        defer { store.close() }
        let space = ProtectionSpace(
            host: "127.0.0.1",
            port: server.origin.port,
            protocol: "http",
            realm: "Restricted",
            authenticationMethod: digest ? .httpDigest : .httpBasic
        )
        #expect(
            store.defaultCredential(for: space)
                == Credential(user: "alice", password: "s3cret", persistence: .permanent)
        )
        var configuration = SessionConfiguration.default
        configuration.credentialStorage = CredentialStorage(store: store)
        let (_, response) = try await Session(configuration: configuration).data(
            for: Request(url: server.origin.url("/z"))
        )
        #expect(response.status == 200)
    }

    @Test("persistence: session is never written to the store; an ephemeral session writes nothing either")
    func sessionPersistenceNotStored() async throws {
        let directory = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = try Self.passwordFile(directory, "pw", "s3cret")
        let server = try await CheckingOrigin.start(password: "s3cret", digest: false)
        defer { server.stop() }
        for (persistence, kind) in [("session", "default"), ("permanent", "ephemeral")] {
            let stores = try CookieCredentialStores(directory: directory + "/data")
            let runtime = PolicyRuntime(
                configuration: try Fixture.load(
                    Self.yaml(port: server.origin.port, file: file, persistence: persistence, kind: kind)
                ),
                sourceFile: nil,
                stores: stores
            )
            let (_, response) = try await runtime.route(server.origin.url()).session.data(
                for: Request(url: server.origin.url())
            )
            #expect(response.status == 200)
            stores.flush()
            #expect(stores.credentialStore?.allCredentials.isEmpty == true, "\(persistence) \(kind)")
            runtime.shutdown()
            stores.close()
        }
    }

    @Test("A wrong password: one retry, then the origin's 401 goes back; nothing is stored")
    func wrongPassword() async throws {
        let directory = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = try Self.passwordFile(directory, "pw", "wrong")
        let server = try await CheckingOrigin.start(password: "s3cret", digest: true)
        defer { server.stop() }
        let stores = try CookieCredentialStores(directory: nil)
        let runtime = PolicyRuntime(
            configuration: try Fixture.load(Self.yaml(port: server.origin.port, file: file, persistence: "permanent")),
            sourceFile: nil,
            stores: stores
        )
        defer { runtime.shutdown() }
        let session = runtime.route(server.origin.url()).session
        let (body, response) = try await session.data(for: Request(url: server.origin.url()))
        #expect(response.status == 401)
        #expect(String(buffer: body) == "denied")
        #expect(server.outcomes.withLockedValue { $0 } == ["challenge", "refused"])
        #expect(session.configuration.credentialStorage?.allCredentials.isEmpty == true)
    }
}
