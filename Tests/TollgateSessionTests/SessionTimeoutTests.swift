import NIOConcurrencyHelpers
import NIOCore
import Testing
import TollgateHTTP
@testable import TollgateSession
import TollgateTesting

@Suite("Timeouts, suspension and back-pressure", .timeLimit(.minutes(1)))
struct SessionTimeoutTests {
    @Test("The request timeout fires when the origin goes quiet mid-response")
    func requestTimeout() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.sendHead(status: 200, headers: ["Content-Length": "10"])
            respond.write("abc")
        }
        defer { origin.stop() }
        let session = Session(configuration: .ephemeral)
        let started = ContinuousClock.now
        let task = try session.dataTask(
            with: Request(url: origin.url(), timeoutInterval: .milliseconds(400))
        ) { _, _, _ in }
        task.resume()
        try await eventually("done") { task.state == .completed }
        #expect(task.error?.code == .timedOut)
        #expect(ContinuousClock.now - started >= .milliseconds(400))
    }

    @Test("The resource timeout ends a task whose origin keeps trickling bytes")
    func resourceTimeout() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.sendHead(status: 200, headers: ["Transfer-Encoding": "chunked"])
            @Sendable func trickle(_ n: Int) {
                guard n > 0 else { return }
                respond.after(.milliseconds(50)) {
                    respond.writeChunk("x")
                    trickle(n - 1)
                }
            }
            trickle(200)
        }
        defer { origin.stop() }
        var configuration = SessionConfiguration.ephemeral
        configuration.timeoutIntervalForResource = .milliseconds(1500)
        configuration.timeoutIntervalForRequest = .seconds(5)
        let session = Session(configuration: configuration)
        let task = try session.dataTask(with: Request(url: origin.url())) { _, _, _ in }
        task.resume()
        try await eventually("done") { task.state == .completed }
        // Bytes kept coming (every 50 ms), so the 5 s request timeout cannot be what ended it.
        #expect(task.error?.code == .timedOut)
        #expect(task.error?.detail.contains("resource") == true)
    }

    @Test("A suspended task reads nothing from the socket and is not subject to timeouts")
    func suspendMidBody() async throws {
        let size = 8 * 1024 * 1024
        let payload = [UInt8](repeating: 0x61, count: size)
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.send(status: 200, bytes: payload)
        }
        defer { origin.stop() }
        let recorder = EventRecorder()
        recorder.onData = { task, _ in
            if task.taskDescription == nil {
                task.taskDescription = "suspended once"
                task.suspend()
            }
        }
        let session = Session(configuration: .ephemeral, delegate: recorder)
        let task = try session.dataTask(with: Request(url: origin.url(), timeoutInterval: .seconds(1)))
        task.resume()
        do {
            try await eventually("suspended") { task.state == .suspended }
        } catch {
            Issue.record("state \(task.state) events \(recorder.events) received \(task.countOfBytesReceived) desc \(task.taskDescription ?? "-")")
            throw error
        }
        try await Task.sleep(for: .milliseconds(100))
        let receivedWhileSuspended = task.countOfBytesReceived
        #expect(receivedWhileSuspended < size)
        // Longer than the request timeout: a suspended task must not time out.
        try await Task.sleep(for: .milliseconds(1500))
        #expect(task.countOfBytesReceived == receivedWhileSuspended)
        #expect(recorder.bodyCount <= Int(receivedWhileSuspended))
        #expect(!recorder.completed)
        task.resume()
        try await eventually("done") { recorder.completed }
        #expect(recorder.error == nil)
        #expect(recorder.bodyCount == size)
    }

    @Test("A suspended task sends no request until resumed")
    func suspendBeforeStartIsSilent() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "ok") }
        defer { origin.stop() }
        let session = Session(configuration: .ephemeral)
        let task = try session.dataTask(with: Request(url: origin.url())) { _, _, _ in }
        task.resume()
        task.suspend()
        task.resume()
        try await eventually("done") { task.state == .completed }
        #expect(task.error == nil)
        #expect(origin.requestCount == 1)
    }

    @Test("A task with an earliestBeginDate waits, then asks willBeginDelayedRequest")
    func delayedStart() async throws {
        // When the request reached the origin: the test's own sleeps may run late on a busy machine.
        let arrived = NIOLockedValueBox<ContinuousClock.Instant?>(nil)
        let origin = try await LoopbackOrigin.start { _, respond in
            arrived.withLockedValue { $0 = $0 ?? .now }
            respond.send(status: 200, body: "ok")
        }
        defer { origin.stop() }
        let recorder = EventRecorder()
        let session = Session(configuration: .ephemeral, delegate: recorder)
        let task = try session.dataTask(with: Request(url: origin.url()))
        let started = ContinuousClock.now
        task.earliestBeginDate = Date().addingTimeInterval(1.5)
        task.resume()
        try await eventually("done") { recorder.completed }
        let reached = try #require(arrived.withLockedValue { $0 })
        #expect(reached - started >= .milliseconds(1450))
        #expect(origin.requestCount == 1)
        #expect(recorder.events.first == "delayed")
    }
}

import Foundation
