import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing
import TollgateHTTP
@testable import TollgateSession
import TollgateTesting

/// Records what a task's own delegate is told, in order.
private final class OwnDelegate: DataTaskDelegate, @unchecked Sendable {
    private let lock = NIOLock()
    private var _events: [String] = []
    var events: [String] { lock.withLock { _events } }
    private func record(_ event: String) { lock.withLock { _events.append(event) } }

    func taskDidCreate(_ task: SessionTask) { record("created") }
    func dataTask(
        _ task: DataTask,
        didReceive response: HTTPResponseHead,
        completionHandler: @escaping @Sendable (ResponseDisposition) -> Void
    ) {
        record("response \(response.status)")
        completionHandler(.allow)
    }
    func dataTask(_ task: DataTask, didReceive data: ByteBuffer) { record("data") }
    func task(_ task: SessionTask, didCompleteWithError error: SessionError?) { record(error == nil ? "complete" : "failed") }
}

/// A task delegate base class, and a subclass that adds the data task messages.
private class PlainDelegate: TaskDelegate, @unchecked Sendable {
    let lock = NIOLock()
    var events: [String] = []
    func task(_ task: SessionTask, didCompleteWithError error: SessionError?) { lock.withLock { events.append("complete") } }
}

private final class DataSubclassDelegate: PlainDelegate, DataTaskDelegate, @unchecked Sendable {
    func dataTask(_ task: DataTask, didReceive data: ByteBuffer) {
        lock.withLock { events.append("data \(String(buffer: data))") }
    }
}

/// Decides at once, and counts how the task asked it.
private final class ImmediateDelegate: ImmediateResponseDeciding, @unchecked Sendable {
    let lock = NIOLock()
    var events: [String] = []
    func dataTask(_ task: DataTask, decideOn response: HTTPResponseHead) -> ResponseDisposition {
        lock.withLock { events.append("decided \(response.status)") }
        return .allow
    }
    func dataTask(
        _ task: DataTask,
        didReceive response: HTTPResponseHead,
        completionHandler: @escaping @Sendable (ResponseDisposition) -> Void
    ) {
        lock.withLock { events.append("asked \(response.status)") }
        completionHandler(.allow)
    }
    func dataTask(_ task: DataTask, didReceive data: ByteBuffer) { lock.withLock { events.append("data") } }
    func task(_ task: SessionTask, didCompleteWithError error: SessionError?) { lock.withLock { events.append("complete") } }
}

@Suite("A task's own delegate, set from any thread", .timeLimit(.minutes(1)))
struct TaskDelegateSettingTests {
    @Test("Set from another thread right after creation and before resume: every message of the load")
    func setFromAnotherThread() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "hello") }
        defer { origin.stop() }
        let session = Session(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        for _ in 0..<20 {
            let own = OwnDelegate()
            let task = try session.dataTask(with: Request(url: origin.url()))
            #expect(!task.eventLoop.inEventLoop)
            task.delegate = own
            task.resume()
            try await eventually("complete") { own.events.last == "complete" }
            // `created` races with the setter (the loop may send it first); what follows resume does not.
            #expect(own.events.filter { $0 != "created" } == ["response 200", "data", "complete"])
        }
    }

    @Test("A subclass that adds the data task messages to a task delegate base gets them")
    func dataMessagesOfASubclass() async throws {
        let own = DataSubclassDelegate()
        try await loadHello(with: own) { own.lock.withLock { own.events.last == "complete" } }
        #expect(own.lock.withLock { own.events } == ["data hello", "complete"])
    }

    @Test("A delegate that decides at once is asked directly, not through the completion handler")
    func immediateDecision() async throws {
        let own = ImmediateDelegate()
        try await loadHello(with: own) { own.lock.withLock { own.events.last == "complete" } }
        #expect(own.lock.withLock { own.events } == ["decided 200", "data", "complete"])
    }

    @Test("A message the task's delegate does not implement goes to the session delegate, one it implements does not")
    func unimplementedMessagesFallThrough() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "hello") }
        defer { origin.stop() }
        let recorder = EventRecorder()
        let session = Session(configuration: .ephemeral, delegate: recorder)
        defer { session.invalidateAndCancel() }
        for _ in 0..<3 {
            // Data and completion are the task delegate's; the response (asked) and the metrics
            // (told) fall through to the session delegate, each time.
            let own = DataSubclassDelegate()
            let before = recorder.events.count
            let task = try session.dataTask(with: Request(url: origin.url()))
            task.delegate = own
            task.resume()
            try await eventually("complete") { own.lock.withLock { own.events.last == "complete" } }
            #expect(own.lock.withLock { own.events } == ["data hello", "complete"])
            let told = Array(recorder.events[before...]).filter { $0 != "created" }
            #expect(told == ["response 200", "metrics"], "\(told)")
            #expect(recorder.metrics != nil)
        }
    }

    /// Loads "hello" from a loopback origin with `delegate` as the task's own, until `completed`.
    private func loadHello(with delegate: any TaskDelegate, until completed: @escaping @Sendable () -> Bool) async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "hello") }
        defer { origin.stop() }
        let session = Session(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let task = try session.dataTask(with: Request(url: origin.url()))
        task.delegate = delegate
        task.resume()
        try await eventually("complete", completed)
    }

    @Test("Replaced from another thread between tasks' messages: the new delegate gets what follows")
    func replacedBeforeResume() async throws {
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, body: "hello") }
        defer { origin.stop() }
        let session = Session(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let first = OwnDelegate()
        let second = OwnDelegate()
        let task = try session.dataTask(with: Request(url: origin.url()))
        task.delegate = first
        task.delegate = second
        #expect(task.delegate === second)
        task.resume()
        try await eventually("complete") { second.events.last == "complete" }
        #expect(!first.events.contains("complete"))
        #expect(second.events.contains("response 200"))
    }
}
