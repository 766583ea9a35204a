import Foundation
import NIOCore
import Testing
import TollgateProxy
import TollgateTesting

@Suite("ProxyServer: binding and shutdown", .timeLimit(.minutes(1)))
struct ProxyServerTests {
    @Test("Port 0 binds a free port, and boundAddress reports it")
    func boundAddress() async throws {
        try await withProxy { proxy in
            #expect(proxy.server.boundAddress.host == "127.0.0.1")
            #expect(proxy.server.boundAddress.port > 0)
            #expect(proxy.server.boundAddress.description == "127.0.0.1:\(proxy.port)")
        }
    }

    @Test("Binding an address in use throws cannotListen naming the address")
    func addressInUse() async throws {
        try await withProxy { proxy in
            let taken = ListenAddress(host: "127.0.0.1", port: proxy.port)
            await #expect {
                _ = try await ProxyServer.start(.init(listen: taken, accessLog: .off))
            } throws: { error in
                "\(error)".contains("cannot listen on 127.0.0.1:\(proxy.port)")
            }
        }
    }

    @Test("Shutdown lets an exchange in flight finish, answers it with Connection: close, and stops accepting")
    func shutdownFinishesInFlight() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.after(.milliseconds(400)) { respond.send(status: 200, body: "late but whole") }
        }
        defer { origin.stop() }
        let proxy = try await ProxyFixture.start()
        let port = proxy.port
        let idle = try await RawClient.connect(port: port)
        defer { idle.close() }
        let busy = try await RawClient.connect(port: port)
        defer { busy.close() }
        try await busy.send("GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\n\r\n")
        try await eventually("the origin got the request") { origin.requestCount == 1 }

        let started = ContinuousClock.now
        await proxy.shutdown(gracePeriod: .seconds(5))
        #expect(ContinuousClock.now - started < .seconds(4))

        try await idle.waitForClose()
        try await busy.waitForClose()
        let response = try #require(busy.responses.first)
        #expect(response.bodyText == "late but whole")
        #expect(response.header("Connection") == "close")
        await #expect(throws: (any Error).self) {
            let late = try await RawClient.connect(port: port)
            late.close()
        }
    }

    @Test("Shutdown closes an exchange that outlives the grace period")
    func shutdownIsBounded() async throws {
        let origin = try await LoopbackOrigin.start { _, _ in }  // never answers
        defer { origin.stop() }
        let proxy = try await ProxyFixture.start()
        let client = try await RawClient.connect(port: proxy.port)
        defer { client.close() }
        try await client.send("GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\n\r\n")
        try await eventually("the origin got the request") { origin.requestCount == 1 }
        let started = ContinuousClock.now
        await proxy.shutdown(gracePeriod: .milliseconds(300))
        let took = ContinuousClock.now - started
        #expect(took >= .milliseconds(300))
        #expect(took < .seconds(3))
        try await client.waitForClose()
        try await eventually("the origin connection closes") { origin.openConnectionCount == 0 }
    }
}
