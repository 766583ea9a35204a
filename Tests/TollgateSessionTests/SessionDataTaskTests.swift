import Foundation
import NIOCore
import Testing
import TollgateHTTP
@testable import TollgateSession
import TollgateTesting

@Suite("Data tasks against a loopback origin", .timeLimit(.minutes(1)))
struct SessionDataTaskTests {
    @Test("data(for:) returns the body and response and sends Host, User-Agent and additional headers")
    func simpleGet() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.send(status: 200, headers: ["Content-Type": "text/plain"], body: "hello")
        }
        defer { origin.stop() }
        var configuration = SessionConfiguration.ephemeral
        configuration.httpAdditionalHeaders = ["X-Team": "web"]
        let session = Session(configuration: configuration)
        let (body, response) = try await session.data(for: Request(url: origin.url("/a?b=1")))
        #expect(String(buffer: body) == "hello")
        #expect(response.status == 200)
        let received = try #require(origin.requests.first)
        #expect(received.target == "/a?b=1")
        #expect(received.headerFields["Host"] == "127.0.0.1:\(origin.port)")
        #expect(received.headerFields["User-Agent"] == "tollgate")
        #expect(received.headerFields["X-Team"] == "web")
    }

    @Test("A new task is suspended and sends nothing until resumed")
    func newTaskIsSuspended() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "x") }
        defer { origin.stop() }
        let recorder = EventRecorder()
        let session = Session(configuration: .ephemeral, delegate: recorder)
        let task = try session.dataTask(with: Request(url: origin.url()))
        #expect(task.state == .suspended)
        try await Task.sleep(for: .milliseconds(200))
        #expect(origin.connectionCount == 0)
        task.resume()
        #expect(task.state != .suspended)
        try await eventually("completion") { recorder.completed }
        #expect(task.state == .completed)
        #expect(recorder.body == "x")
        #expect(recorder.events == ["response 200", "metrics", "complete"])
    }

    @Test("Cancelling a suspended task completes it with cancelled and sends nothing")
    func cancelSuspended() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200) }
        defer { origin.stop() }
        let recorder = EventRecorder()
        let session = Session(configuration: .ephemeral, delegate: recorder)
        let task = try session.dataTask(with: Request(url: origin.url()))
        task.cancel()
        #expect(task.state == .canceling || task.state == .completed)
        try await eventually("completion") { recorder.completed }
        #expect(recorder.error?.code == .cancelled)
        #expect(task.state == .completed)
        #expect(task.error?.code == .cancelled)
        try await Task.sleep(for: .milliseconds(100))
        #expect(origin.connectionCount == 0)
    }

    @Test("Cancelling a running task closes its connection and completes it with cancelled")
    func cancelRunning() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.sendHead(status: 200, headers: ["Content-Length": "100"])
        }
        defer { origin.stop() }
        let recorder = EventRecorder()
        let session = Session(configuration: .ephemeral, delegate: recorder)
        let task = try session.dataTask(with: Request(url: origin.url()))
        task.resume()
        try await eventually("response") { task.response != nil }
        task.cancel()
        try await eventually("completion") { recorder.completed }
        #expect(recorder.error?.code == .cancelled)
        try await eventually("origin sees the close") { origin.openConnectionCount == 0 }
        task.cancel()
        task.resume()
        #expect(task.state == .completed)
    }

    @Test("A delegate answering cancel to the response ends the task without data")
    func responseDispositionCancel() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "secret") }
        defer { origin.stop() }
        let recorder = EventRecorder()
        recorder.onResponse = { _, _ in .cancel }
        let session = Session(configuration: .ephemeral, delegate: recorder)
        let task = try session.dataTask(with: Request(url: origin.url()))
        task.resume()
        try await eventually("completion") { recorder.completed }
        #expect(recorder.error?.code == .cancelled)
        #expect(recorder.bodyCount == 0)
    }

    @Test("Task identifiers are unique within a session and allTasks lists live tasks")
    func identifiersAndAllTasks() async throws {
        let session = Session(configuration: .ephemeral)
        let url = HTTPURL(string: "http://127.0.0.1:9/")!
        let tasks = try (0..<5).map { _ in try session.dataTask(with: Request(url: url)) }
        #expect(Set(tasks.map(\.taskIdentifier)).count == 5)
        #expect(session.allTasks.map(\.taskIdentifier) == tasks.map(\.taskIdentifier))
        tasks[0].taskDescription = "first"
        #expect(tasks[0].taskDescription == "first")
        tasks[0].priority = 7
        #expect(tasks[0].priority == 1)
        for task in tasks { task.cancel() }
        try await eventually("tasks gone") { session.allTasks.isEmpty }
    }

    @Test("Byte counters: expected-to-receive is the Content-Length, or -1 when unknown")
    func byteCounters() async throws {
        let origin = try await LoopbackOrigin.start { request, respond in
            if request.path == "/chunked" {
                respond.send(status: 200, headers: ["Transfer-Encoding": "chunked"], body: "abcdef")
            } else {
                respond.send(status: 200, body: "abcd")
            }
        }
        defer { origin.stop() }
        let recorder = EventRecorder()
        let session = Session(configuration: .ephemeral, delegate: recorder)
        let known = try session.dataTask(with: Request(url: origin.url("/known")))
        #expect(known.countOfBytesExpectedToReceive == -1)
        known.resume()
        try await eventually("known done") { known.state == .completed }
        #expect(known.countOfBytesExpectedToReceive == 4)
        #expect(known.countOfBytesReceived == 4)
        #expect(known.countOfBytesExpectedToSend == 0)
        let chunked = try session.dataTask(with: Request(url: origin.url("/chunked")))
        chunked.resume()
        try await eventually("chunked done") { chunked.state == .completed }
        #expect(chunked.countOfBytesExpectedToReceive == -1)
        #expect(chunked.countOfBytesReceived == 6)
    }

    @Test("The body arrives piece by piece as the origin sends it")
    func bodyStreams() async throws {
        // The origin sends the second piece only once the client has been given the first, so a
        // session that held the body until its end would never finish.
        let firstDelivered = NIOLockedBox(false)
        let origin = try await LoopbackOrigin.start { _, respond in
            respond.sendHead(status: 200, headers: ["Transfer-Encoding": "chunked"])
            respond.writeChunk("one")
            @Sendable func sendRestWhenDelivered(_ attempts: Int) {
                respond.after(.milliseconds(10)) {
                    if firstDelivered.get() || attempts == 0 {
                        respond.writeChunk("two")
                        respond.endChunked()
                    } else {
                        sendRestWhenDelivered(attempts - 1)
                    }
                }
            }
            sendRestWhenDelivered(500)
        }
        defer { origin.stop() }
        let pieces = NIOLockedBox<[String]>([])
        let recorder = EventRecorder()
        recorder.onData = { _, data in
            pieces.mutate { $0.append(String(buffer: data)) }
            firstDelivered.set(true)
        }
        let session = Session(configuration: .ephemeral, delegate: recorder)
        let task = try session.dataTask(with: Request(url: origin.url()))
        task.resume()
        try await eventually("first piece") { firstDelivered.get() }
        try await eventually("completion") { recorder.completed }
        #expect(pieces.get() == ["one", "two"])
    }

    @Test("A completion handler gets the whole body and the delegate's response, data and completion methods are not called")
    func completionHandlerTask() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 201, body: "whole") }
        defer { origin.stop() }
        let recorder = EventRecorder()
        let session = Session(configuration: .ephemeral, delegate: recorder)
        let result = NIOLockedBox<(String, Int)?>(nil)
        let task = try session.dataTask(with: Request(url: origin.url())) { body, response, _ in
            result.set((body.map { String(buffer: $0) } ?? "", response?.status ?? 0))
        }
        task.resume()
        try await eventually("handler") { result.get() != nil }
        #expect(result.get()?.0 == "whole")
        #expect(result.get()?.1 == 201)
        try await eventually("metrics") { recorder.metrics != nil }
        // The seeds (002): with a completion handler, the delegate hears of neither the response,
        // the data nor the completion.
        #expect(!recorder.completed)
        #expect(!recorder.events.contains { $0.hasPrefix("response") })
        #expect(recorder.bodyCount == 0)
    }
}

/// A tiny lock-protected box for test results.
final class NIOLockedBox<Value>: @unchecked Sendable {
    private var value: Value
    private let lock = NSLock()
    init(_ value: Value) { self.value = value }
    func get() -> Value { lock.withLock { value } }
    func set(_ newValue: Value) { lock.withLock { value = newValue } }
    func mutate(_ body: (inout Value) -> Void) { lock.withLock { body(&value) } }
}
