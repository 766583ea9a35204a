import Foundation
import Logging
import Testing
import TollgateHTTP
import TollgatePolicy
import TollgateSession
import TollgateTLS
import TollgateTesting

/// The policy's server-trust answers and per-host TLS settings, end to end: a `PolicyRuntime` built
/// from YAML, its session, and an origin speaking real TLS (OpenSSL on both sides).
@Suite("Policy trust: roots, pins, insecure, deny and client certificates over real TLS", .timeLimit(.minutes(1)))
struct PolicyTrustTests {
    // MARK: roots

    @Test func aPEMBundleInRootsTrustsItsCA() async throws {
        let f = try TrustFixture()
        let origin = try await f.origin()
        defer { origin.stop() }
        let runtime = try f.runtime(
            hosts: """
                  - match: "127.0.0.1"
                    trust: { roots: "\(f.pki.caFile)" }
                """
        )
        defer { runtime.shutdown() }

        #expect(try await f.fetch(runtime, origin.url("/")) == "ok")
        #expect(origin.requestCount == 1)
        #expect(runtime.trustFailures.isEmpty)
        #expect(f.lines.isEmpty, "a trusted connection logs nothing")
    }

    @Test func anUnknownCAIsUntrustedWithTheSystemRootsOnly() async throws {
        let f = try TrustFixture()
        let origin = try await f.origin()
        defer { origin.stop() }
        let runtime = try f.runtime(
            hosts: """
                  - match: "127.0.0.1"
                    trust: { roots: system }
                """
        )
        defer { runtime.shutdown() }

        let error = try #require(await f.failure(runtime, origin.url("/")))
        #expect(error.code == .serverCertificateUntrusted)
        #expect(error.detail.hasPrefix("127.0.0.1: "), "the detail names the host: \(error.detail)")
        #expect(error.detail.contains("unable to get local issuer certificate"), "OpenSSL's reason: \(error.detail)")
        #expect(origin.requestCount == 0, "nothing is sent to an untrusted server")
        #expect(runtime.trustFailures == ["127.0.0.1": 1])

        let line = try #require(f.lines.only)
        #expect(line.level == .error)
        #expect(line.metadata["event"] == "untrusted")
        #expect(line.metadata["rule"] == "hosts[0]:127.0.0.1")
        #expect(line.message.contains("127.0.0.1:\(origin.port)"))
        #expect(line.message.contains("\(f.leafPin) CN=127.0.0.1"), "each presented pin and subject: \(line.message)")
    }

    @Test func aRootsBundleThatCannotBeReadFailsTheConnectionNamingTheFile() async throws {
        let f = try TrustFixture()
        let origin = try await f.origin()
        defer { origin.stop() }
        let bundle = try f.write("partner.pem", f.pki.authority.certificate.pemString)
        let runtime = try f.runtime(
            hosts: """
                  - match: "127.0.0.1"
                    trust: { roots: "\(bundle)" }
                """
        )
        defer { runtime.shutdown() }
        try FileManager.default.removeItem(atPath: bundle)

        let error = try #require(await f.failure(runtime, origin.url("/")))
        #expect(error.code == .secureConnectionFailed)
        #expect(error.detail.contains(bundle), "the detail names the file: \(error.detail)")
        #expect(origin.requestCount == 0)
        let line = try #require(f.lines.only)
        #expect(line.metadata["event"] == "roots-unreadable")
        #expect(line.message.contains("cannot read the roots bundle \(bundle)"), "\(line.message)")
    }

    // MARK: pins

    @Test func theRightPinPasses() async throws {
        let f = try TrustFixture()
        let origin = try await f.origin()
        defer { origin.stop() }
        let runtime = try f.runtime(
            hosts: """
                  - match: "127.0.0.1"
                    trust: { roots: "\(f.pki.caFile)", pins: ["\(f.leafPin)"] }
                """
        )
        defer { runtime.shutdown() }

        #expect(try await f.fetch(runtime, origin.url("/")) == "ok")
        #expect(runtime.trustFailures.isEmpty)
        #expect(f.lines.isEmpty)
    }

    @Test func aWrongPinFailsAsPinMismatchListingThePresentedPins() async throws {
        let f = try TrustFixture()
        let origin = try await f.origin()
        defer { origin.stop() }
        let wrong = try TrustFixture.unusedPin()
        let runtime = try f.runtime(
            hosts: """
                  - match: "127.0.0.1"
                    trust: { roots: "\(f.pki.caFile)", pins: ["\(wrong)"] }
                """
        )
        defer { runtime.shutdown() }

        let error = try #require(await f.failure(runtime, origin.url("/")))
        #expect(error.code == .pinMismatch)
        let expected =
            "pin mismatch for 127.0.0.1: expected \(wrong); presented: \(f.leafPin) CN=127.0.0.1, "
            + "\(f.caPin) CN=Tollgate Test CA"
        #expect(error.detail == expected)
        #expect(error.failingURL?.host == "127.0.0.1")
        #expect(origin.requestCount == 0, "the request never reaches a server that fails the pin check")
        #expect(runtime.trustFailures == ["127.0.0.1": 1])

        let line = try #require(f.lines.only)
        #expect(line.level == .error)
        #expect(line.metadata["event"] == "pin-mismatch")
        #expect(line.message.hasPrefix(expected), "the log line carries the same text: \(line.message)")
        #expect(line.message.contains("refused"))
    }

    @Test func aBackupPinSecondInTheListPasses() async throws {
        let f = try TrustFixture()
        let origin = try await f.origin()
        defer { origin.stop() }
        // The second pin is the CA's: any certificate of the verified chain may match.
        let runtime = try f.runtime(
            hosts: """
                  - match: "127.0.0.1"
                    trust: { roots: "\(f.pki.caFile)", pins: ["\(try TrustFixture.unusedPin())", "\(f.caPin)"] }
                """
        )
        defer { runtime.shutdown() }

        #expect(try await f.fetch(runtime, origin.url("/")) == "ok")
        #expect(runtime.trustFailures.isEmpty)
    }

    @Test func reportModeConnectsAndRecordsTheMismatch() async throws {
        let f = try TrustFixture()
        let origin = try await f.origin()
        defer { origin.stop() }
        let wrong = try TrustFixture.unusedPin()
        let runtime = try f.runtime(
            hosts: """
                  - match: "127.0.0.1"
                    trust: { roots: "\(f.pki.caFile)", pins: ["\(wrong)"], pin-mode: report }
                """
        )
        defer { runtime.shutdown() }

        #expect(try await f.fetch(runtime, origin.url("/")) == "ok")
        #expect(runtime.trustFailures == ["127.0.0.1": 1])
        #expect(
            runtime.trustFailureCounter.byHostAndKind == [
                TrustFailureCounter.Key(host: "127.0.0.1", kind: .pinReport): 1
            ]
        )
        let line = try #require(f.lines.only)
        #expect(line.level == .warning)
        #expect(line.metadata["event"] == "pin-report")
        #expect(line.message.contains("pin mismatch for 127.0.0.1: expected \(wrong); presented: \(f.leafPin)"))
        #expect(line.message.contains("pin-mode report"))
    }

    @Test func pinsPastTheirExpiryAreReportedNotEnforced() async throws {
        let f = try TrustFixture()
        let origin = try await f.origin()
        defer { origin.stop() }
        let runtime = try f.runtime(
            hosts: """
                  - match: "127.0.0.1"
                    trust:
                      roots: "\(f.pki.caFile)"
                      pins: ["\(try TrustFixture.unusedPin())"]
                      pin-mode: enforce
                      pins-expire: 2020-01-31
                """
        )
        defer { runtime.shutdown() }

        #expect(try await f.fetch(runtime, origin.url("/")) == "ok")
        #expect(runtime.trustFailures == ["127.0.0.1": 1])
        let line = try #require(f.lines.only)
        #expect(line.metadata["event"] == "pin-report")
        #expect(line.message.contains("pin mismatch for 127.0.0.1"))
        #expect(line.message.contains("expired on 2020-01-31"), "\(line.message)")
        #expect(line.message.contains("stale"))
    }

    // MARK: insecure and deny

    @Test func insecureAcceptsAnUnknownCAAndWarnsAtEveryConnection() async throws {
        let f = try TrustFixture()
        let origin = try await f.origin(closeEach: true)
        defer { origin.stop() }
        let runtime = try f.runtime(
            hosts: """
                  - match: "127.0.0.1"
                    trust: { insecure: true }
                """
        )
        defer { runtime.shutdown() }

        #expect(try await f.fetch(runtime, origin.url("/")) == "ok")
        #expect(try await f.fetch(runtime, origin.url("/again")) == "ok")
        #expect(origin.connectionCount == 2)
        let lines = f.lines
        #expect(lines.count == 2, "one line per connection: \(lines.map(\.message))")
        for line in lines {
            #expect(line.level == .warning)
            #expect(line.metadata["event"] == "insecure")
            #expect(line.message.contains("INSECURE connection to 127.0.0.1:\(origin.port)"))
            #expect(line.message.contains("hosts[0]:127.0.0.1"))
            #expect(
                line.message.contains("unable to get local issuer certificate"),
                "OpenSSL's verdict: \(line.message)"
            )
        }
        #expect(runtime.trustFailures.isEmpty, "an accepted insecure connection is not a trust failure")
    }

    @Test func aDeniedHostIsRefusedAtTheChallenge() async throws {
        let f = try TrustFixture()
        let origin = try await f.origin()
        defer { origin.stop() }
        let runtime = try f.runtime(
            hosts: """
                  - match: "127.0.0.1"
                    trust: { roots: "\(f.pki.caFile)", deny: true }
                """
        )
        defer { runtime.shutdown() }

        let error = try #require(await f.failure(runtime, origin.url("/")))
        #expect(error.code == .serverCertificateUntrusted)
        #expect(error.detail.contains("denied by hosts[0]"), "\(error.detail)")
        #expect(origin.requestCount == 0)
        #expect(f.lines.only?.metadata["event"] == "denied")
    }

    // MARK: client certificates

    /// A server that requires a certificate issued by the test CA.
    static func requiringServer(_ f: TrustFixture) -> TLSConfiguration {
        var server = f.pki.serverConfiguration
        server.clientCertificateRequirement = .required
        server.trustRoots = f.pki.trustRoots
        return server
    }

    @Test func aRequiredClientCertificateComesFromClientIdentity() async throws {
        let f = try TrustFixture()
        let origin = try await f.origin(Self.requiringServer(f))
        defer { origin.stop() }
        let identity = try f.writeClientIdentity()
        let runtime = try f.runtime(
            hosts: """
                  - match: "127.0.0.1"
                    trust: { roots: "\(f.pki.caFile)" }
                    client-identity: { certificate: "\(identity.certificate)", key: "\(identity.key)" }
                """
        )
        defer { runtime.shutdown() }

        #expect(try await f.fetch(runtime, origin.url("/")) == "ok")
        #expect(origin.requestCount == 1)
    }

    @Test func withoutClientIdentityARequiredClientCertificateFails() async throws {
        let f = try TrustFixture()
        let origin = try await f.origin(Self.requiringServer(f))
        defer { origin.stop() }
        let runtime = try f.runtime(
            hosts: """
                  - match: "127.0.0.1"
                    trust: { roots: "\(f.pki.caFile)" }
                """
        )
        defer { runtime.shutdown() }

        _ = try #require(await f.failure(runtime, origin.url("/")))
        #expect(origin.requestCount == 0)
    }

    @Test func aClientIdentityThatCannotBeLoadedFailsNamingTheFileNotItsContents() async throws {
        let f = try TrustFixture()
        let origin = try await f.origin()
        defer { origin.stop() }
        let identity = try f.writeClientIdentity()
        let notAKey = try f.write("broken.key", "this is not a key\n")
        let otherKey = f.directory + "/other.key"
        try PrivateKey(generating: .ecP256).write(toPEMFile: otherKey)
        let runtime = try f.runtime(
            hosts: """
                  - match: "127.0.0.1"
                    trust: { roots: "\(f.pki.caFile)" }
                    client-identity: { certificate: "\(identity.certificate)", key: "\(notAKey)" }
                  - match: "localhost"
                    trust: { roots: "\(f.pki.caFile)" }
                    client-identity: { certificate: "\(identity.certificate)", key: "\(otherKey)" }
                """
        )
        defer { runtime.shutdown() }

        let unreadable = try #require(await f.failure(runtime, origin.url("/")))
        #expect(unreadable.code == .secureConnectionFailed)
        #expect(unreadable.detail.contains("cannot load the client key \(notAKey)"), "\(unreadable.detail)")
        #expect(!unreadable.detail.contains("this is not a key"))

        let mismatched = try #require(await f.failure(runtime, origin.url("/", host: "localhost")))
        #expect(mismatched.code == .secureConnectionFailed)
        #expect(mismatched.detail.contains("\(otherKey) does not belong to the certificate \(identity.certificate)"))
        let keyText = try String(contentsOfFile: otherKey, encoding: .utf8)
        let keyBody = keyText.split(separator: "\n").dropFirst().first.map(String.init) ?? "-"
        #expect(!mismatched.detail.contains(keyBody), "no key material in the message")
        #expect(!f.lines.contains { $0.message.contains(keyBody) })
        #expect(origin.requestCount == 0)
        #expect(f.lines.filter { $0.metadata["event"] == "client-identity" }.count == 2)
    }

    // MARK: reload

    @Test func aReloadChangesTheTrustOfAKeptSession() async throws {
        let f = try TrustFixture()
        let origin = try await f.origin()
        defer { origin.stop() }
        let file = try f.write("tollgate.yaml", Self.reloadYAML(trust: "{ roots: system }"))
        let runtime = PolicyRuntime(
            configuration: try PolicyLoader().load(contentsOf: file),
            sourceFile: file,
            trustEnvironment: f.environment,
            prepareSession: { _, _, _ in }
        )
        defer { runtime.shutdown() }
        let session = try #require(runtime.sessions["default"])

        #expect(await f.failure(runtime, origin.url("/"))?.code == .serverCertificateUntrusted)

        try f.write("tollgate.yaml", Self.reloadYAML(trust: "{ roots: \"\(f.pki.caFile)\" }"))
        #expect(runtime.reload().isEmpty)
        #expect(runtime.sessions["default"] === session, "the session is kept: only hosts changed")
        #expect(try await f.fetch(runtime, origin.url("/")) == "ok")

        // The connection just used is idle in the pool; a reload that adds pins retires it.
        let pins = "{ roots: \"\(f.pki.caFile)\", pins: [\"\(try TrustFixture.unusedPin())\"] }"
        try f.write("tollgate.yaml", Self.reloadYAML(trust: pins))
        #expect(runtime.reload().isEmpty)
        #expect(await f.failure(runtime, origin.url("/"))?.code == .pinMismatch)
        #expect(origin.requestCount == 1)
        #expect(runtime.trustFailures == ["127.0.0.1": 2])
    }

    static func reloadYAML(trust: String) -> String {
        """
        sessions:
          default: { configuration: ephemeral }
        hosts:
          - match: "127.0.0.1"
            trust: \(trust)
        """
    }
}

extension Array {
    /// The single element, or nil when there are none or several.
    fileprivate var only: Element? { count == 1 ? first : nil }
}
