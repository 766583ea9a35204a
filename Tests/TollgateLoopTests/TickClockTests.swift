import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing
@testable import TollgateLoop

#if canImport(Glibc)
import Glibc
#endif

@Suite("The clock read once per event", .timeLimit(.minutes(1)))
struct TickClockTests {
    /// Long enough for both clocks to move past any resolution.
    private static func pause() { usleep(2_000) }

    @Test("outside an event every read is a new reading")
    func outsideAnEvent() {
        #expect(!TickClock.isInEvent)
        let first = TickClock.now
        let firstDate = TickClock.date
        Self.pause()
        #expect(TickClock.now > first)
        #expect(TickClock.date > firstDate)
    }

    @Test("inside an event every read gives the event's reading, nested events included")
    func insideAnEvent() {
        let before = NIODeadline.now()
        TickClock.begin()
        let first = TickClock.now
        let firstDate = TickClock.date
        #expect(first >= before)
        Self.pause()
        #expect(TickClock.now == first)
        #expect(TickClock.date == firstDate)
        TickClock.begin()
        Self.pause()
        #expect(TickClock.now == first)
        TickClock.end()
        // The inner event's end keeps the outer event's reading.
        #expect(TickClock.isInEvent)
        #expect(TickClock.now == first)
        #expect(TickClock.date == firstDate)
        TickClock.end()
        #expect(!TickClock.isInEvent)
        #expect(TickClock.now > first)
        #expect(TickClock.date > firstDate)
    }

    @Test("the next event reads the clock again")
    func nextEvent() {
        TickClock.begin()
        let first = TickClock.now
        let firstDate = TickClock.date
        TickClock.end()
        Self.pause()
        TickClock.begin()
        defer { TickClock.end() }
        #expect(TickClock.now > first)
        #expect(TickClock.date > firstDate)
    }

    @Test("each thread has its own event and reading")
    func perThread() throws {
        TickClock.begin()
        defer { TickClock.end() }
        let mine = TickClock.now
        Self.pause()
        let theirs = try Self.onAnotherThread { () -> (Bool, NIODeadline) in
            TickClock.begin()
            defer { TickClock.end() }
            return (TickClock.isInEvent, TickClock.now)
        }
        #expect(theirs.0)
        #expect(theirs.1 > mine)
        #expect(TickClock.now == mine)
    }

    /// Runs `body` on a new thread and waits for it.
    private static func onAnotherThread<T: Sendable>(_ body: @escaping @Sendable () -> T) throws -> T {
        let result = NIOLockedValueBox<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            let value = body()
            result.withLockedValue { $0 = value }
            done.signal()
        }
        thread.start()
        done.wait()
        return try #require(result.withLockedValue { $0 })
    }
}
