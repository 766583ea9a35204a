import Foundation
import NIOCore
import Testing
import TollgateHTTP
@testable import TollgateSession
import TollgateTLS
import TollgateTesting

/// h2 inside an upstream proxy's CONNECT tunnel: the TLS inside is the session's, so it offers
/// `h2, http/1.1` as a direct connection does, and the pool multiplexes over one tunnel per origin.
/// The parent is a tiny Python tunnelling proxy (not Tollgate); the origin nghttpd, h2 only.
@Suite(
    "HTTP/2 through an upstream proxy's tunnel (Python CONNECT proxy, nghttpd)",
    .timeLimit(.minutes(2)),
    .enabled(if: NGHTTPDOrigin.isInstalled, "needs nghttpd (Debian nghttp2-server)")
)
struct SessionHTTP2TunnelTests {
    @Test("Ten tasks at once to an h2-only origin through the parent share ONE tunnel as concurrent h2 streams")
    func multiplexedTunnel() async throws {
        let pki = try TestPKI()
        let origin = try await NGHTTPDOrigin.start(pki: pki, files: ["t.txt": Data("through the tunnel".utf8)])
        defer { origin.stop() }
        let parent = try await PythonConnectProxy.start()
        defer { parent.stop() }
        var configuration = SessionConfiguration.ephemeral
        configuration.upstreamProxy = UpstreamProxy(host: "127.0.0.1", port: parent.port)
        configuration.tlsConfiguration = pki.sessionTLSConfiguration
        let session = Session(configuration: configuration)
        let recorders = (0..<10).map { _ in EventRecorder() }
        for events in recorders {
            let task = try session.dataTask(with: Request(url: origin.url("/t.txt")))
            task.delegate = events
            task.resume()
        }
        try await eventually("all ten done", timeout: .seconds(30)) { recorders.allSatisfy { $0.completed && $0.metrics != nil } }
        #expect(recorders.allSatisfy { $0.error == nil })
        #expect(recorders.allSatisfy { $0.body == "through the tunnel" })
        let transactions = recorders.compactMap { $0.metrics?.transactionMetrics.last }
        #expect(transactions.count == 10)
        #expect(transactions.allSatisfy { $0.networkProtocolName == "h2" && $0.isProxyConnection })
        #expect(transactions.filter { !$0.isReusedConnection }.count == 1)
        #expect(parent.tunnels == ["127.0.0.1:\(origin.port)"])
        #expect(origin.sessionCount == 1)
        #expect(session.connectionsStarted == 1)
    }

    @Test("With h2 taken out of the offer, the tunnel's TLS offers http/1.1 only and the h2-only origin refuses it")
    func offInsideTheTunnel() async throws {
        let pki = try TestPKI()
        let origin = try await NGHTTPDOrigin.start(pki: pki, files: ["t.txt": Data("h2 only".utf8)])
        defer { origin.stop() }
        let parent = try await PythonConnectProxy.start()
        defer { parent.stop() }
        var configuration = SessionConfiguration.ephemeral
        configuration.upstreamProxy = UpstreamProxy(host: "127.0.0.1", port: parent.port)
        let trust = pki.sessionTLSConfiguration
        configuration.tlsConfiguration = { host, port, defaults in
            var chosen = trust(host, port, defaults)
            chosen.applicationProtocols.removeAll { $0 == "h2" }
            return chosen
        }
        let session = Session(configuration: configuration)
        await #expect(throws: SessionError.self) {
            _ = try await session.data(for: Request(url: origin.url("/t.txt")))
        }
        #expect(parent.tunnels.first == "127.0.0.1:\(origin.port)")
        #expect(!origin.process.standardOutput.contains("recv HEADERS"))
    }
}
