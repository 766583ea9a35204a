import Foundation
import NIOCore
import Testing
import TollgateHTTP
import TollgateSession
import TollgateTesting

@Suite("connectionAddressCheck: addresses vetted where the pool connects", .timeLimit(.minutes(1)))
struct SessionAddressCheckTests {
    @Test("A refused address is never connected to; the task fails naming why; others connect")
    func refusedAddress() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "ok") }
        defer { origin.stop() }
        let other = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "other") }
        defer { other.stop() }
        var configuration = SessionConfiguration.ephemeral
        let deniedPort = origin.port
        configuration.connectionAddressCheck = { host, port, address in
            port == deniedPort ? "\(host):\(port) at \(address.ipAddress ?? "?") is off limits" : nil
        }
        let session = Session(configuration: configuration)
        defer { session.invalidateAndCancel() }
        await #expect {
            _ = try await session.data(for: Request(url: origin.url("/x", host: "localhost")))
        } throws: { error in
            guard let error = error as? SessionError else { return false }
            return error.code == .cannotConnectToHost && "\(error)".contains("localhost:\(deniedPort) at ") && "\(error)".contains("off limits")
        }
        #expect(origin.connectionCount == 0)
        let (body, _) = try await session.data(for: Request(url: other.url("/y")))
        #expect(String(buffer: body) == "other")
    }
}
