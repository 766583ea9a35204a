import Foundation
import Testing
import TollgateHTTP
import TollgatePolicy
import TollgateTLS
import TollgateTesting

@testable import TollgateProxy

/// A runtime whose one listener on 127.0.0.1:0 has TLS from `srv.pem`/`srv.key` in a temporary
/// directory.
private struct ReloadSetup {
    let directory: URL
    let pki: TestPKI
    let runtime: PolicyRuntime

    init() throws {
        directory = try temporaryDirectory()
        pki = try TestPKI(commonName: "Reload CA", host: "127.0.0.1")
        runtime = PolicyRuntime(configuration: PolicyConfiguration(), sourceFile: nil, prepareSession: { _, _, _ in })
        try write(pki.server)
        runtime.apply(configuration())
    }

    var files: PolicyConfiguration.Listener.TLS.CertificateFiles {
        .init(certificate: directory.appendingPathComponent("srv.pem").path, key: directory.appendingPathComponent("srv.key").path)
    }

    func write(_ identity: Identity) throws {
        try identity.certificate.pemString.write(toFile: files.certificate, atomically: true, encoding: .utf8)
        try identity.privateKey.write(toPEMFile: files.key, overwrite: true)
    }

    /// A configuration whose listener at `port` has TLS with `certificates`.
    func configuration(port: Int = 0, certificates: [PolicyConfiguration.Listener.TLS.CertificateFiles]? = nil) -> PolicyConfiguration {
        var configuration = PolicyConfiguration()
        configuration.listeners = [
            .init(address: .init(host: "127.0.0.1", port: port), tls: .init(certificates: certificates ?? [files]))
        ]
        return configuration
    }

    func remove() {
        runtime.shutdown()
        try? FileManager.default.removeItem(at: directory)
    }
}

@Suite("A TLS listener in process: its context across reloads, start-up and shutdown")
struct ListenerTLSTests {
    @Test("The context is kept while the rules are; after a reload it is made again from the files (a renewed certificate)")
    func remadeAfterReload() throws {
        let setup = try ReloadSetup()
        defer { setup.remove() }
        let tls = try ListenerTLS(
            settings: .init(certificates: [setup.files]),
            configuredAddress: ListenAddress(host: "127.0.0.1", port: 0),
            generation: setup.runtime.generation
        )
        let first = tls.context(policy: setup.runtime)
        #expect(first === tls.context(policy: setup.runtime))
        #expect(first.configuration.identity?.certificate == setup.pki.server.certificate)

        let renewed = try setup.pki.authority.issueLeaf(for: "127.0.0.1")
        try setup.write(renewed)
        #expect(tls.context(policy: setup.runtime) === first)  // no reload yet: nothing is read
        setup.runtime.apply(setup.configuration())
        let second = tls.context(policy: setup.runtime)
        #expect(second !== first)
        #expect(second.configuration.identity?.certificate == renewed.certificate)
    }

    @Test("Files that fail after the loader's check, and a configuration without the listener, keep the context in force")
    func keptWhenUnusable() throws {
        let setup = try ReloadSetup()
        defer { setup.remove() }
        let tls = try ListenerTLS(
            settings: .init(certificates: [setup.files]),
            configuredAddress: ListenAddress(host: "127.0.0.1", port: 0),
            generation: setup.runtime.generation
        )
        let inForce = tls.context(policy: setup.runtime)
        let gone = PolicyConfiguration.Listener.TLS.CertificateFiles(certificate: setup.files.certificate, key: "/nonexistent/srv.key")
        setup.runtime.apply(setup.configuration(certificates: [gone]))
        #expect(tls.context(policy: setup.runtime) === inForce)
        setup.runtime.apply(setup.configuration(port: 1))
        #expect(tls.context(policy: setup.runtime) === inForce)
    }

    @Test("A server whose certificate cannot be loaded does not start, and says which file")
    func startRefused() async throws {
        let setup = try ReloadSetup()
        defer { setup.remove() }
        let other = try setup.pki.authority.issueLeaf(for: "a.test")
        try other.privateKey.write(toPEMFile: setup.files.key, overwrite: true)
        var configuration = ProxyServer.Configuration(listen: ListenAddress(host: "127.0.0.1", port: 0))
        configuration.tls = .init(certificates: [setup.files])
        await #expect {
            _ = try await ProxyServer.start(configuration, policy: setup.runtime)
        } throws: { error in
            "\(error)" == "the key \(setup.files.key) does not belong to the certificate \(setup.files.certificate)"
        }
    }

    @Test("Shutting down closes a connection still in its handshake at once, instead of waiting out the grace period")
    func shutdownDuringHandshake() async throws {
        let setup = try ReloadSetup()
        defer { setup.remove() }
        var configuration = ProxyServer.Configuration(listen: ListenAddress(host: "127.0.0.1", port: 0))
        configuration.tls = .init(certificates: [setup.files])
        let server = try await ProxyServer.start(configuration, policy: setup.runtime)
        let client = try await RawClient.connect(port: server.boundAddress.port)
        defer { client.close() }
        try await Task.sleep(for: .milliseconds(100))  // accepted: the handshake waits for a ClientHello
        let started = ContinuousClock.now
        await server.shutdown(gracePeriod: .seconds(8))
        #expect(ContinuousClock.now - started < .seconds(4))
        try await client.waitForClose()
    }

    @Test("ALPN: h2 is HTTP/2, http/1.1 and no protocol at all are HTTP/1.1; a TLS listener offers h2 first")
    func protocolSelection() {
        #expect(ClientProtocolSelection(negotiated: "http/1.1") == .http1)
        #expect(ClientProtocolSelection(negotiated: nil) == .http1)
        #expect(ClientProtocolSelection(negotiated: "h2") == .http2)
        #expect(ClientProtocolSelection(negotiated: "spdy/3") == .http1)
        #expect(ClientProtocolSelection.offeredProtocols == ["h2", "http/1.1"])
        #expect(ClientProtocolSelection.offeredProtocols(for: .reverse(upstream: HTTPURL(string: "http://o.test/")!)) == ["h2", "http/1.1"])
        #expect(ClientProtocolSelection.offeredProtocols(for: .forward) == ["h2", "http/1.1"])
    }
}
