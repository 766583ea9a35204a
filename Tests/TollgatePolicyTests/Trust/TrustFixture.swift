import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import Testing
import TollgateHTTP
import TollgatePolicy
import TollgateSession
import TollgateTLS
import TollgateTesting

/// One captured log line.
struct CapturedLine: Sendable {
    var level: Logger.Level
    var message: String
    var metadata: [String: String]
}

/// A log handler that keeps every line (one `Logger` per test: no global bootstrap).
struct CapturingLogHandler: LogHandler {
    let lines: NIOLockedValueBox<[CapturedLine]>
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        let line = CapturedLine(
            level: event.level,
            message: event.message.description,
            metadata: merged.mapValues { "\($0)" }
        )
        lines.withLockedValue { $0.append(line) }
    }
}

/// A test CA and leaf for 127.0.0.1, a temporary directory for the files a policy names, a runtime
/// built from YAML whose trust events are captured, and origins speaking TLS.
final class TrustFixture: Sendable {
    let pki: TestPKI
    let directory: String
    let captured = NIOLockedValueBox<[CapturedLine]>([])
    let environment: TrustEnvironment

    init() throws {
        pki = try TestPKI()
        directory = try Fixture.temporaryDirectory()
        let lines = captured
        environment = TrustEnvironment(
            logger: Logger(label: "tollgate.trust") { _ in CapturingLogHandler(lines: lines) }
        )
    }

    /// The trust log lines so far.
    var lines: [CapturedLine] { captured.withLockedValue { $0 } }

    /// The leaf's pin (what the server presents first).
    var leafPin: String { pki.server.certificate.spkiPin.description }
    /// The CA's pin (the anchor of the verified chain).
    var caPin: String { pki.authority.certificate.spkiPin.description }
    /// A pin of a key nobody uses.
    static func unusedPin() throws -> String { try PrivateKey(generating: .ecP256).spkiPin.description }

    /// Writes `text` to `name` in the directory; returns the path.
    @discardableResult
    func write(_ name: String, _ text: String) throws -> String {
        let path = directory + "/" + name
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// A client identity issued by the test CA, written as `client.pem` and `client.key`.
    func writeClientIdentity() throws -> (certificate: String, key: String) {
        let client = try pki.authority.issueLeaf(for: "client.test", usage: .clientAuth)
        let certificate = try write("client.pem", client.certificateChain.map(\.pemString).joined())
        let key = directory + "/client.key"
        try client.privateKey.write(toPEMFile: key)
        return (certificate, key)
    }

    /// A runtime for `hosts` (the `hosts:` section's entries, indented by two spaces), on an
    /// ephemeral default session, loaded as `check-config` would (files must be readable).
    func runtime(hosts: String) throws -> PolicyRuntime {
        let yaml = """
            sessions:
              default: { configuration: ephemeral }
            hosts:
            \(hosts)
            """
        let configuration = try PolicyLoader().load(yaml: yaml, file: "trust.yaml", baseDirectory: directory)
        return PolicyRuntime(
            configuration: configuration,
            sourceFile: nil,
            trustEnvironment: environment,
            prepareSession: { _, _, _ in }
        )
    }

    /// An origin answering every request with 200 "ok" over TLS `server` (the PKI's leaf unless given).
    func origin(_ server: TLSConfiguration? = nil, closeEach: Bool = false) async throws -> LoopbackOrigin {
        try await LoopbackOrigin.start(tls: server ?? pki.serverConfiguration) { _, respond in
            respond.send(status: 200, headers: closeEach ? ["Connection": "close"] : [:], body: "ok")
        }
    }

    /// GET `url` through the runtime's route for it; the body as text.
    func fetch(_ runtime: PolicyRuntime, _ url: HTTPURL) async throws -> String {
        let route = runtime.route(url)
        let (body, head) = try await route.session.data(for: Request(url: url))
        #expect(head.status == 200)
        return String(buffer: body)
    }

    /// GET `url` through the runtime, expecting it to fail; the error (nil, with an issue, if it did not).
    func failure(_ runtime: PolicyRuntime, _ url: HTTPURL) async -> SessionError? {
        do {
            let body = try await fetch(runtime, url)
            Issue.record("the request succeeded with \"\(body)\"")
            return nil
        } catch let error as SessionError {
            return error
        } catch {
            Issue.record("not a SessionError: \(error)")
            return nil
        }
    }
}
