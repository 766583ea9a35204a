import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing
import TollgateHTTP
@testable import TollgateSession
import TollgateTesting

@Suite("Session life, errors and metrics", .timeLimit(.minutes(1)))
struct SessionLifeTests {
    @Test("finishTasksAndInvalidate lets running tasks finish, then reports invalid and refuses new tasks")
    func finishAndInvalidate() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.after(.milliseconds(200)) { respond.send(status: 200, body: "late") }
        }
        defer { origin.stop() }
        let recorder = EventRecorder()
        let session = Session(configuration: .ephemeral, delegate: recorder)
        let task = try session.dataTask(with: Request(url: origin.url()))
        task.resume()
        session.finishTasksAndInvalidate()
        #expect(throws: SessionError.self) { _ = try session.dataTask(with: Request(url: origin.url())) }
        try await eventually("invalidated") { recorder.invalidated }
        #expect(recorder.error == nil)
        #expect(recorder.body == "late")
        #expect(recorder.events.last == "invalid")
        #expect(session.delegate == nil)
    }

    @Test("invalidateAndCancel cancels running tasks and reports invalid")
    func invalidateAndCancel() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.sendHead(status: 200, headers: ["Content-Length": "5"])
        }
        defer { origin.stop() }
        let recorder = EventRecorder()
        let session = Session(configuration: .ephemeral, delegate: recorder)
        let task = try session.dataTask(with: Request(url: origin.url()))
        task.resume()
        try await eventually("response") { task.response != nil }
        session.invalidateAndCancel()
        try await eventually("invalidated") { recorder.invalidated }
        #expect(recorder.error?.code == .cancelled)
        #expect(throws: SessionError.self) { _ = try session.dataTask(with: Request(url: origin.url())) }
    }

    @Test("Metrics are present and in order for a new connection")
    func metricsOrdered() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "12345") }
        defer { origin.stop() }
        let recorder = EventRecorder()
        let session = Session(configuration: .ephemeral, delegate: recorder)
        let task = try session.dataTask(with: Request(url: origin.url()))
        task.resume()
        try await eventually("done") { recorder.completed }
        #expect(recorder.events.suffix(2) == ["metrics", "complete"])
        let metrics = try #require(recorder.metrics)
        let t = try #require(metrics.transactionMetrics.first)
        let dates = [t.fetchStartDate, t.domainLookupStartDate, t.domainLookupEndDate, t.connectStartDate, t.connectEndDate,
                     t.requestStartDate, t.requestEndDate, t.responseStartDate, t.responseEndDate]
        let present = dates.compactMap { $0 }
        #expect(present.count == dates.count)
        #expect(present == present.sorted())
        #expect(t.networkProtocolName == "http/1.1")
        #expect(t.resourceFetchType == .networkLoad)
        #expect(t.isReusedConnection == false)
        #expect(t.countOfResponseBodyBytesReceived == 5)
        #expect(t.countOfRequestHeaderBytesSent > 0)
        #expect(t.remoteAddress == "127.0.0.1:\(origin.port)")
        #expect(metrics.taskInterval.duration >= 0)
    }

    @Test("A closed port fails with cannotConnectToHost")
    func cannotConnect() async throws {
        let port = try await closedPort()
        let session = Session(configuration: .ephemeral)
        await #expect(throws: SessionError(.cannotConnectToHost)) {
            _ = try await session.data(for: Request(url: HTTPURL(string: "http://127.0.0.1:\(port)/")!))
        }
    }

    @Test("With waitsForConnectivity the task reports waiting once and keeps trying until the resource timeout")
    func waitsForConnectivity() async throws {
        let port = try await closedPort()
        let recorder = EventRecorder()
        var configuration = SessionConfiguration.ephemeral
        configuration.waitsForConnectivity = true
        configuration.timeoutIntervalForResource = .milliseconds(1500)
        let session = Session(configuration: configuration, delegate: recorder)
        let task = try session.dataTask(with: Request(url: HTTPURL(string: "http://127.0.0.1:\(port)/")!))
        task.resume()
        try await eventually("done") { recorder.completed }
        #expect(recorder.events.filter { $0 == "waiting" }.count == 1)
        #expect(recorder.error?.code == .timedOut)
    }

    @Test("Garbage from the origin fails with badServerResponse")
    func badResponse() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.write("NOT HTTP AT ALL\r\n\r\n")
            respond.close()
        }
        defer { origin.stop() }
        let session = Session(configuration: .ephemeral)
        await #expect(throws: SessionError(.badServerResponse)) {
            _ = try await session.data(for: Request(url: origin.url()))
        }
    }

    @Test("A connection that dies mid-body fails with networkConnectionLost, never a short success")
    func diesMidBody() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.sendHead(status: 200, headers: ["Content-Length": "100"])
            respond.write("only ten!!")
            respond.after(.milliseconds(50)) { respond.close() }
        }
        defer { origin.stop() }
        let session = Session(configuration: .ephemeral)
        await #expect(throws: SessionError(.networkConnectionLost)) {
            _ = try await session.data(for: Request(url: origin.url()))
        }
    }

    @Test("Schemes other than http and https are refused as unsupported")
    func otherSchemesRefused() async throws {
        let session = Session(configuration: .ephemeral)
        await #expect(throws: SessionError(.unsupportedURL)) {
            _ = try await session.data(for: Request(url: HTTPURL(string: "ftp://127.0.0.1:1/")!))
        }
    }

    @Test("The configuration is copied: later changes do not affect the session")
    func configurationCopied() {
        var configuration = SessionConfiguration.background(identifier: "warm")
        let session = Session(configuration: configuration)
        configuration.httpMaximumConnectionsPerHost = 1
        #expect(session.configuration.httpMaximumConnectionsPerHost == 6)
        #expect(session.configuration.kind.backgroundIdentifier == "warm")
        #expect(SessionConfiguration.ephemeral.kind.isEphemeral)
        #expect(!SessionConfiguration.default.kind.isEphemeral)
    }
}

/// Ports with nothing listening; held for the whole test run so no other test reuses them.
private let closedPorts = (0..<8).map { _ in ClosedPort() }
private let nextClosedPort = NIOLockedValueBox(0)

/// A port on 127.0.0.1 where connections are refused.
func closedPort() async throws -> Int {
    let index = nextClosedPort.withLockedValue { value -> Int in
        defer { value += 1 }
        return value % closedPorts.count
    }
    return closedPorts[index].port
}
