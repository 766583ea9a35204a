import Foundation
import Testing
import TollgateHTTP
import TollgatePolicy
import TollgateSession

/// A session's `upstream-proxy-credentials`: how it loads, what check-config says, and the
/// credential its ``SessionConfiguration`` carries.
@Suite("upstream-proxy-credentials")
struct UpstreamProxyCredentialsLoadingTests {
    @Test("user and password-env load, and the session configuration carries the password read from the environment")
    func fromTheEnvironment() throws {
        let configuration = try Fixture.load(
            """
            sessions:
              default:
                upstream-proxy: "http://127.0.0.1:3129"
                upstream-proxy-credentials: { user: ci, password-env: TOLLGATE_TEST_PARENT_PASS }
            """
        )
        let settings = try #require(configuration.session(named: "default"))
        #expect(settings.upstreamProxyCredentials == UpstreamProxyCredentials(user: "ci", password: .environment("TOLLGATE_TEST_PARENT_PASS")))
        // The model prints without the secret, and explain names its source.
        #expect("\(settings)".contains("TOLLGATE_TEST_PARENT_PASS"))
        let explained = PolicyDecisions(configuration: configuration).explain(try #require(HTTPURL(string: "http://example.test/")))
        #expect(explained.contains(
            "upstream-proxy: 127.0.0.1:3129 (credentials: user ci, password from environment variable TOLLGATE_TEST_PARENT_PASS)"
        ), "\(explained)")
        setenv("TOLLGATE_TEST_PARENT_PASS", "s3cret", 1)
        defer { unsetenv("TOLLGATE_TEST_PARENT_PASS") }
        let session = settings.makeSessionConfiguration(name: "default")
        #expect(session.upstreamProxyCredential?.user == "ci")
        #expect(session.upstreamProxyCredential?.password == "s3cret")
        #expect(!"\(session.upstreamProxyCredential!)".contains("s3cret"))
        // A proxy's sessions relay server-push bodies whole (their clients split the parts).
        #expect(!session.deliversMultipartReplaceParts)
    }

    @Test("A password file readable by others is a problem that says how to fix it; 0600 is fine")
    func fileMode() throws {
        let directory = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/parent.pass"
        try Data("s3cret\n".utf8).write(to: URL(fileURLWithPath: file))
        let yaml = """
            sessions:
              default:
                upstream-proxy: "http://127.0.0.1:3129"
                upstream-proxy-credentials:
                  user: ci
                  password-file: "\(file)"
            """
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file)
        #expect(Fixture.problems(yaml, checkFiles: true) == [
            "t.yaml:6: sessions.default.upstream-proxy-credentials.password-file: \"\(file)\" is readable by others (mode 644): chmod 600 \(file)"
        ])
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file)
        #expect(Fixture.problems(yaml, checkFiles: true) == [])
        let settings = try #require(try Fixture.load(yaml).session(named: "default"))
        #expect(settings.makeSessionConfiguration(name: "default").upstreamProxyCredential?.password == "s3cret")
    }

    @Test("Mistakes are named: no user, no password source, both sources, no upstream-proxy, an unknown key")
    func mistakes() {
        #expect(Fixture.problems("sessions:\n  default:\n    upstream-proxy: \"http://p:1\"\n    upstream-proxy-credentials: { password-env: X }") == [
            "t.yaml:4: sessions.default.upstream-proxy-credentials: missing key \"user\""
        ])
        #expect(Fixture.problems("sessions:\n  default:\n    upstream-proxy: \"http://p:1\"\n    upstream-proxy-credentials: { user: ci }") == [
            "t.yaml:4: sessions.default.upstream-proxy-credentials: missing key \"password-env\" or \"password-file\""
        ])
        #expect(Fixture.problems("sessions:\n  default:\n    upstream-proxy-credentials: { user: ci, password-env: X }") == [
            "t.yaml:3: sessions.default.upstream-proxy-credentials: upstream-proxy-credentials needs an upstream-proxy to answer"
        ])
        #expect(Fixture.problems("sessions:\n  default:\n    upstream-proxy: \"http://p:1\"\n    upstream-proxy-credentials: { user: ci, password: x }").count == 2)
    }
}
