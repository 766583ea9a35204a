import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
import TollgateTesting
@testable import TollgateLoop

@Suite("One timer per loop for all the deadlines on it", .timeLimit(.minutes(1)))
struct LoopDeadlinesTests {
    /// Records when it was told; optionally does something then (on the loop).
    final class Watcher: DeadlineWatcher, @unchecked Sendable {
        var deadlineSlot = DeadlineSlot()
        let name: String
        let told: NIOLockedValueBox<[String]>
        var onTold: (() -> Void)?

        init(_ name: String, _ told: NIOLockedValueBox<[String]>) {
            self.name = name
            self.told = told
        }

        /// When it was last told (the loop's time then).
        var toldAt: NIODeadline?

        func deadlinePassed() {
            toldAt = .now()
            told.withLockedValue { $0.append(name) }
            onTold?()
        }
    }

    private static func onLoop<T: Sendable>(_ loop: any EventLoop, _ body: @escaping @Sendable () -> T) async throws -> T {
        try await loop.submit(body).get()
    }

    @Test("Watchers are told in deadline order; one unwatched is never told")
    func order() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let told = NIOLockedValueBox<[String]>([])
        let (late, early, gone) = (Watcher("late", told), Watcher("early", told), Watcher("gone", told))
        let registered = try await Self.onLoop(loop) { () -> NIODeadline in
            let deadlines = LoopDeadlines.of(loop)
            let now = NIODeadline.now()
            deadlines.watch(late, until: now + .milliseconds(300))
            deadlines.watch(gone, until: now + .milliseconds(100))
            // Registered after a later one: the loop's timer must move earlier.
            deadlines.watch(early, until: now + .milliseconds(150))
            deadlines.unwatch(gone)
            #expect(deadlines.count == 2)
            #expect(!gone.deadlineSlot.isWatched)
            return now
        }
        // Judged by when each was told, not by what a sleep of the test saw: on a busy machine a
        // sleep may end long after both deadlines.
        try await eventually("both told") { told.withLockedValue { $0.count } >= 2 }
        try await Task.sleep(for: .milliseconds(100))
        #expect(told.withLockedValue { $0 } == ["early", "late"])
        let (earlyAt, lateAt, left) = try await Self.onLoop(loop) { (early.toldAt, late.toldAt, LoopDeadlines.of(loop).count) }
        #expect(try #require(earlyAt) >= registered + .milliseconds(150))
        #expect(try #require(lateAt) >= registered + .milliseconds(300))
        #expect(left == 0)
        try await group.shutdownGracefully()
    }

    @Test("A later deadline does not move the watch; a watcher told early registers again")
    func movedLater() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let told = NIOLockedValueBox<[String]>([])
        let watcher = Watcher("w", told)
        let started = NIODeadline.now()
        // Far enough from the first that a busy loop tells it first before the real one is due.
        let realDeadline = NIOLockedValueBox(started + .milliseconds(600))
        watcher.onTold = {
            // Like a task whose request timeout was restarted: the real deadline is later.
            let real = realDeadline.withLockedValue { $0 }
            if real > .now() { LoopDeadlines.of(loop).watch(watcher, until: real) }
        }
        try await Self.onLoop(loop) {
            LoopDeadlines.of(loop).watch(watcher, until: started + .milliseconds(100))
            // Later than registered: no change.
            LoopDeadlines.of(loop).watch(watcher, until: started + .milliseconds(600))
            #expect(LoopDeadlines.of(loop).deadline(of: watcher) == started + .milliseconds(100))
        }
        // Told once at 100 ms, when it registers again for 600 ms, then told again.
        try await eventually("told once") { told.withLockedValue { $0.count } >= 1 }
        let firstAt = try #require(try await Self.onLoop(loop) { watcher.toldAt })
        #expect(firstAt >= started + .milliseconds(100))
        try await eventually("told again") { told.withLockedValue { $0.count } >= 2 }
        try await Task.sleep(for: .milliseconds(100))
        #expect(told.withLockedValue { $0 } == ["w", "w"])
        let secondAt = try #require(try await Self.onLoop(loop) { watcher.toldAt })
        #expect(secondAt >= started + .milliseconds(600))
        #expect(try await Self.onLoop(loop) { !watcher.deadlineSlot.isWatched })
        try await group.shutdownGracefully()
    }

    @Test("A watcher told first can end another that was due at the same time")
    func endsAnother() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let told = NIOLockedValueBox<[String]>([])
        let (first, second) = (Watcher("first", told), Watcher("second", told))
        first.onTold = { LoopDeadlines.of(loop).unwatch(second) }
        second.onTold = { LoopDeadlines.of(loop).unwatch(first) }
        try await Self.onLoop(loop) {
            let due = NIODeadline.now() + .milliseconds(50)
            LoopDeadlines.of(loop).watch(first, until: due)
            LoopDeadlines.of(loop).watch(second, until: due)
        }
        try await Task.sleep(for: .milliseconds(200))
        #expect(told.withLockedValue { $0.count } == 1)
        try await group.shutdownGracefully()
    }

    @Test("Many watchers joining and leaving keep their slots right")
    func swapRemoval() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let told = NIOLockedValueBox<[String]>([])
        let watchers = (0..<50).map { Watcher("w\($0)", told) }
        try await Self.onLoop(loop) {
            let deadlines = LoopDeadlines.of(loop)
            let now = NIODeadline.now()
            for (index, watcher) in watchers.enumerated() {
                deadlines.watch(watcher, until: now + .milliseconds(index.isMultiple(of: 2) ? 60 : 60_000))
            }
            // Leave in an order that moves others around.
            for index in stride(from: 1, to: 50, by: 2).reversed() where index % 3 != 0 {
                deadlines.unwatch(watchers[index])
            }
        }
        try await Task.sleep(for: .milliseconds(250))
        let names = Set(told.withLockedValue { $0 })
        #expect(names == Set((0..<50).filter { $0.isMultiple(of: 2) }.map { "w\($0)" }))
        let left = try await Self.onLoop(loop) { () -> [String] in
            let deadlines = LoopDeadlines.of(loop)
            let remaining = watchers.filter(\.deadlineSlot.isWatched).map(\.name)
            for watcher in watchers { deadlines.unwatch(watcher) }
            #expect(deadlines.count == 0)
            return remaining
        }
        #expect(Set(left) == Set((0..<50).filter { !$0.isMultiple(of: 2) && $0 % 3 == 0 }.map { "w\($0)" }))
        try await group.shutdownGracefully()
    }

    @Test("In random order of joining, moving earlier and leaving, watchers are told in deadline order")
    func heapOrder() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let told = NIOLockedValueBox<[String]>([])
        var generator = SystemRandomNumberGenerator()
        let watchers = (0..<300).map { Watcher("\($0)", told) }
        // Deadlines in whole milliseconds from a common start, so the expected order is exact.
        let initialDues = (0..<300).map { _ in Int.random(in: 50...250, using: &generator) }
        let plan: [(Int, Int?)] = (0..<600).map { _ in
            (Int.random(in: 0..<300), Bool.random(using: &generator) ? Int.random(in: 30...250, using: &generator) : nil)
        }
        // Joining and the plan in one turn of the loop, so no deadline can pass in between
        // however busy the machine is: a number moves a deadline (earlier only counts), nil leaves.
        let outcome = try await Self.onLoop(loop) { [plan] () -> ([Int], Set<Int>) in
            let deadlines = LoopDeadlines.of(loop)
            let start = NIODeadline.now() + .milliseconds(20)
            for (index, watcher) in watchers.enumerated() {
                deadlines.watch(watcher, until: start + .milliseconds(Int64(initialDues[index])))
            }
            var dues = initialDues
            var left = Set(0..<300)
            for (index, move) in plan {
                if let move {
                    guard left.contains(index) else { continue }
                    deadlines.watch(watchers[index], until: start + .milliseconds(Int64(move)))
                    dues[index] = min(dues[index], move)
                } else {
                    deadlines.unwatch(watchers[index])
                    left.remove(index)
                }
            }
            return (dues, left)
        }
        let (dues, left) = outcome
        try await eventually("all told") { told.withLockedValue { $0.count } >= left.count }
        try await Task.sleep(for: .milliseconds(100))
        let order = told.withLockedValue { $0 }.map { Int($0)! }
        #expect(Set(order) == left)
        #expect(order.count == left.count)
        let toldDues = order.map { dues[$0] }
        #expect(toldDues == toldDues.sorted())
        try await group.shutdownGracefully()
    }
}
