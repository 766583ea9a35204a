import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
import TollgateHTTP
import TollgateTesting

@testable import TollgateSession

/// A clock a test moves by hand; it starts at the real time, so the loop's own watchdog (which
/// wakes at real deadlines far beyond the test) stays out of the way.
final class ManualTaskClock: TaskClock {
    private let reading = NIOLockedValueBox(NIODeadline.now())
    var now: NIODeadline { reading.withLockedValue { $0 } }

    func advance(by amount: TimeAmount) {
        reading.withLockedValue { $0 = $0 + amount }
    }
}

/// The request and resource timeouts judged by a session's own ``TaskClock``: the test moves the
/// clock and wakes the task's watchdog itself, so nothing waits for a timeout to pass.
@Suite("Task timeouts on an injected clock", .timeLimit(.minutes(1)))
struct TaskTimeoutClockTests {
    /// An origin that sends 3 of 10 body bytes, then nothing.
    static func quietOrigin() async throws -> LoopbackOrigin {
        try await LoopbackOrigin.start { _, respond in
            respond.sendHead(status: 200, headers: ["Content-Length": "10"])
            respond.write("abc")
        }
    }

    /// Runs the task's watchdog on its loop, as the loop's deadline list would at a deadline.
    static func wake(_ task: SessionTask) async throws {
        try await task.eventLoop.submit { task.deadlinePassed() }.get()
    }

    @Test("The request timeout fails a task whose origin went quiet only once the clock has passed it")
    func requestTimeout() async throws {
        let origin = try await Self.quietOrigin()
        defer { origin.stop() }
        let clock = ManualTaskClock()
        let session = Session(
            configuration: .ephemeral,
            delegate: nil,
            eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
            taskClock: clock
        )
        defer { session.invalidateAndCancel() }
        let task = try session.dataTask(with: Request(url: origin.url(), timeoutInterval: .seconds(60))) { _, _, _ in }
        task.resume()
        try await eventually("the first bytes arrived") { task.countOfBytesReceived == 3 }
        clock.advance(by: .seconds(59))
        try await Self.wake(task)
        #expect(task.state == .running)
        clock.advance(by: .seconds(2))
        try await Self.wake(task)
        try await eventually("completed") { task.state == .completed }
        #expect(task.error?.code == .timedOut)
        #expect(task.error?.detail.contains("request timeout") == true)
    }

    @Test("The resource timeout goes by the clock and keeps its budget while the task is suspended")
    func resourceTimeoutPausesWhileSuspended() async throws {
        let origin = try await Self.quietOrigin()
        defer { origin.stop() }
        let clock = ManualTaskClock()
        var configuration = SessionConfiguration.ephemeral
        configuration.timeoutIntervalForResource = .seconds(120)
        configuration.timeoutIntervalForRequest = .seconds(600)
        let session = Session(
            configuration: configuration,
            delegate: nil,
            eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
            taskClock: clock
        )
        defer { session.invalidateAndCancel() }
        let task = try session.dataTask(with: Request(url: origin.url())) { _, _, _ in }
        task.resume()
        try await eventually("the first bytes arrived") { task.countOfBytesReceived == 3 }
        clock.advance(by: .seconds(100))
        try await Self.wake(task)
        #expect(task.state == .running)
        task.suspend()
        try await task.eventLoop.submit {}.get()  // the suspension ran on the loop
        clock.advance(by: .seconds(1000))
        try await Self.wake(task)
        #expect(task.state == .suspended)
        task.resume()
        try await task.eventLoop.submit {}.get()
        clock.advance(by: .seconds(19))  // 119 s of running time in all
        try await Self.wake(task)
        #expect(task.state == .running)
        clock.advance(by: .seconds(2))
        try await Self.wake(task)
        try await eventually("completed") { task.state == .completed }
        #expect(task.error?.code == .timedOut)
        #expect(task.error?.detail.contains("resource") == true)
    }
}
