import Foundation
import Testing
import TollgateHTTP
import TollgatePolicy
import TollgateSession
import TollgateTLS
import TollgateTesting

/// A rule's `trust.crls` over real TLS: lists issued by the `openssl ca` command, the policy's
/// session connecting to an origin whose leaf they revoke or not.
@Suite("Policy trust: revocation lists (trust.crls)", .timeLimit(.minutes(1)))
struct RevocationTrustTests {
    private func revoking(_ f: TrustFixture, revoke: Bool) async throws -> TestCRL {
        let crls = try TestCRL(authority: f.pki.authority)
        if revoke { try await crls.revoke(f.pki.server.certificate) }
        return crls
    }

    @Test func aLeafTheListRevokesIsRefusedAsRevoked() async throws {
        let f = try TrustFixture()
        let origin = try await f.origin()
        defer { origin.stop() }
        let list = try await revoking(f, revoke: true).writeCRL()
        let runtime = try f.runtime(
            hosts: """
                  - match: "127.0.0.1"
                    trust: { roots: "\(f.pki.caFile)", crls: "\(list)" }
                """
        )
        defer { runtime.shutdown() }

        let error = try #require(await f.failure(runtime, origin.url("/")))
        #expect(error.code == .serverCertificateUntrusted)
        #expect(error.detail.contains("certificate revoked"), "OpenSSL's reason: \(error.detail)")
        #expect(origin.requestCount == 0, "nothing is sent to a revoked server")
        #expect(runtime.trustFailures == ["127.0.0.1": 1])
        let line = try #require(f.lines.first)
        #expect(line.metadata["event"] == "revoked")
        #expect(line.message.contains("crls \(list)"), "the line names the lists: \(line.message)")
    }

    @Test func aListThatRevokesAnotherCertificatePassesAndPinsStillApply() async throws {
        let f = try TrustFixture()
        let origin = try await f.origin()
        defer { origin.stop() }
        let crls = try await revoking(f, revoke: false)
        try await crls.revoke(try f.pki.authority.issueLeaf(for: "other.test").certificate)
        let list = try await crls.writeCRL(der: true)
        let runtime = try f.runtime(
            hosts: """
                  - match: "127.0.0.1"
                    trust: { roots: "\(f.pki.caFile)", crls: ["\(list)"], pins: ["\(f.leafPin)"] }
                """
        )
        defer { runtime.shutdown() }
        #expect(try await f.fetch(runtime, origin.url("/")) == "ok")
        #expect(runtime.trustFailures.isEmpty)
        #expect(f.lines.isEmpty)
    }

    @Test func aRevokedLeafIsRefusedEvenWhenItsPinMatches() async throws {
        let f = try TrustFixture()
        let origin = try await f.origin()
        defer { origin.stop() }
        let list = try await revoking(f, revoke: true).writeCRL()
        let runtime = try f.runtime(
            hosts: """
                  - match: "127.0.0.1"
                    trust: { roots: "\(f.pki.caFile)", crls: "\(list)", pins: ["\(f.leafPin)"] }
                """
        )
        defer { runtime.shutdown() }
        let error = try #require(await f.failure(runtime, origin.url("/")))
        #expect(error.code == .serverCertificateUntrusted)
        #expect(error.detail.contains("certificate revoked"))
    }

    @Test func anExpiredListFailsClosed() async throws {
        let f = try TrustFixture()
        let origin = try await f.origin()
        defer { origin.stop() }
        let list = try await revoking(f, revoke: false).writeCRL(validFor: 1)
        try await Task.sleep(for: .seconds(2))
        let runtime = try f.runtime(
            hosts: """
                  - match: "127.0.0.1"
                    trust: { roots: "\(f.pki.caFile)", crls: "\(list)" }
                """
        )
        defer { runtime.shutdown() }
        let error = try #require(await f.failure(runtime, origin.url("/")))
        #expect(error.code == .serverCertificateUntrusted)
        #expect(error.detail.contains("CRL has expired"), "\(error.detail)")
        #expect(f.lines.first?.metadata["event"] == "untrusted")
    }

    @Test func aListFileThatCannotBeReadFailsTheConnectionNamingTheFile() async throws {
        let f = try TrustFixture()
        let origin = try await f.origin()
        defer { origin.stop() }
        let list = try f.write("partner.crl", try String(contentsOfFile: try await revoking(f, revoke: false).writeCRL(), encoding: .utf8))
        let runtime = try f.runtime(
            hosts: """
                  - match: "127.0.0.1"
                    trust: { roots: "\(f.pki.caFile)", crls: "\(list)" }
                """
        )
        defer { runtime.shutdown() }
        try FileManager.default.removeItem(atPath: list)

        let error = try #require(await f.failure(runtime, origin.url("/")))
        #expect(error.code == .secureConnectionFailed)
        #expect(error.detail.contains(list), "the detail names the file: \(error.detail)")
        #expect(origin.requestCount == 0)
        let line = try #require(f.lines.first)
        #expect(line.metadata["event"] == "crls-unreadable")
        #expect(line.message.contains("cannot read the CRLs in \(list)"), "\(line.message)")
    }

    @Test func aDamagedListIsAConfigurationErrorAtItsLine() throws {
        let f = try TrustFixture()
        let damaged = try f.write("damaged.crl", "-----BEGIN X509 CRL-----\nnot base64\n-----END X509 CRL-----\n")
        let yaml = """
            hosts:
              - match: "127.0.0.1"
                trust:
                  crls: ["\(damaged)"]
            """
        let failure = #expect(throws: PolicyLoader.Failure.self) {
            try PolicyLoader().load(yaml: yaml, file: "trust.yaml", baseDirectory: f.directory)
        }
        let problem = try #require(failure?.problems.first)
        #expect(problem.line == 4)
        #expect(problem.key == "hosts[0].trust.crls[0]")
        #expect(problem.message.contains("cannot read the CRLs in \(damaged)"), "\(problem.message)")
    }

    @Test func aReloadPutsARefreshedListInForceForTheNextConnection() async throws {
        let f = try TrustFixture()
        let origin = try await f.origin()
        defer { origin.stop() }
        let crls = try await revoking(f, revoke: false)
        let list = f.directory + "/partner.crl"
        try FileManager.default.copyItem(atPath: try await crls.writeCRL(), toPath: list)
        let file = try f.write("tollgate.yaml", PolicyTrustTests.reloadYAML(trust: "{ roots: \"\(f.pki.caFile)\", crls: \"\(list)\" }"))
        let runtime = PolicyRuntime(
            configuration: try PolicyLoader().load(contentsOf: file),
            sourceFile: file,
            trustEnvironment: f.environment,
            prepareSession: { _, _, _ in }
        )
        defer { runtime.shutdown() }
        #expect(try await f.fetch(runtime, origin.url("/")) == "ok")

        // The CA revokes the origin's leaf; the file is replaced under the same path and the
        // configuration is not changed: the reload alone closes the idle connection.
        try await crls.revoke(f.pki.server.certificate)
        try FileManager.default.removeItem(atPath: list)
        try FileManager.default.copyItem(atPath: try await crls.writeCRL(), toPath: list)
        #expect(runtime.reload().isEmpty)
        let error = try #require(await f.failure(runtime, origin.url("/")))
        #expect(error.detail.contains("certificate revoked"), "\(error.detail)")
        #expect(origin.requestCount == 1)
    }

    @Test func explainNamesTheLists() throws {
        let f = try TrustFixture()
        let list = try f.write("a.crl", "")
        let configuration = try PolicyLoader(checkFiles: false).load(
            yaml: """
                hosts:
                  - match: "partner.example"
                    trust: { crls: ["\(list)"] }
                """,
            file: "trust.yaml",
            baseDirectory: f.directory
        )
        let text = PolicyDecisions(configuration: configuration).explain(HTTPURL(string: "https://partner.example/")!)
        #expect(text.contains("revocation checked against crls \(list)"), "\(text)")
    }
}
