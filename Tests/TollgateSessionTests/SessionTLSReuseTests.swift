import Foundation
import NIOCore
import Testing
import TollgateHTTP
import TollgateSession
import TollgateTLS
import TollgateTesting

@Suite("https keep-alive: a reused TLS connection", .timeLimit(.minutes(1)))
struct SessionTLSReuseTests {
    /// A TLS server with autoRead on (the origin's side) that got the client's first request in
    /// the same read as its Finished used to answer it and then never read the socket again: the
    /// second request on the connection timed out. It happens only when the two arrive together,
    /// so this tries many fresh connections, pausing between the requests as a client would.
    @Test("Each of many fresh connections serves a second request after a pause")
    func secondRequestOnFreshConnections() async throws {
        let pki = try TestPKI()
        let origin = try await LoopbackOrigin.start(tls: pki.serverConfiguration) { request, respond in
            respond.send(status: 200, body: "answer \(request.target)")
        }
        defer { origin.stop() }
        var configuration = SessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = .seconds(3)
        configuration.tlsConfiguration = pki.sessionTLSConfiguration
        for round in 0..<25 {
            let session = Session(configuration: configuration, delegate: nil)
            defer { session.invalidateAndCancel() }
            for request in 0..<2 {
                let path = "/\(round)/\(request)"
                let (body, _) = try await session.data(for: Request(url: origin.url(path)))
                #expect(String(buffer: body) == "answer \(path)")
                try await Task.sleep(for: .milliseconds(Int.random(in: 1...20)))
            }
        }
        #expect(origin.requests.filter { $0.requestNumberOnConnection == 2 }.count == 25)
    }
}
