import NIOCore
import NIOPosix

/// An object whose deadline ``LoopDeadlines`` watches.
package protocol DeadlineWatcher: AnyObject {
    /// Where the watcher sits in its loop's list; kept by ``LoopDeadlines`` alone.
    var deadlineSlot: DeadlineSlot { get set }
    /// The deadline the watcher registered has passed. Called on the loop after the watcher left
    /// the list: a watcher whose real deadline moved later registers again.
    func deadlinePassed()
}

/// A watcher's place in ``LoopDeadlines``.
package struct DeadlineSlot {
    fileprivate var index = -1
    /// The deadline registered (the watcher is told at or after it).
    package fileprivate(set) var due = NIODeadline.distantFuture

    package init() {}

    /// Whether the watcher is in the list.
    package var isWatched: Bool { index >= 0 }
}

/// The deadlines of all the tasks, exchanges and client connections on one event loop, behind a
/// single NIO timer.
///
/// Why: a timer per request costs three allocations to schedule and a linear search of the
/// loop's timer heap to cancel, and almost every request cancels its timers (they are timeouts
/// that rarely run out). Here the deadlines are a binary min-heap whose entries know their place
/// (``DeadlineSlot``): joining and leaving it is O(log n) with no allocation, and the NIO timer is
/// moved only when a deadline earlier than every other one is registered. A deadline that moves
/// later (a request timeout restarted by each event) is not re-registered: the watcher is told at
/// the old deadline, finds its real one later, and registers that.
///
/// Confined to its loop: every method runs on it.
package final class LoopDeadlines: @unchecked Sendable {
    private let loop: any EventLoop
    /// A min-heap by `deadlineSlot.due`; each watcher's `deadlineSlot.index` is its place.
    private var heap: [any DeadlineWatcher] = []
    private var timer: Scheduled<Void>?
    private var timerDue: NIODeadline?

    private init(loop: any EventLoop) {
        self.loop = loop
    }

    private static let perThread = ThreadSpecificVariable<LoopDeadlines>()

    /// The deadlines of `loop`, which must be the current thread's loop.
    package static func of(_ loop: any EventLoop) -> LoopDeadlines {
        precondition(loop.inEventLoop, "LoopDeadlines are used on their loop only")
        if let current = perThread.currentValue, current.loop === loop { return current }
        let made = LoopDeadlines(loop: loop)
        perThread.currentValue = made
        return made
    }

    /// How many watchers are registered (for tests).
    package var count: Int { heap.count }

    /// Tells `watcher` when `due` has passed; a watcher already registered for an earlier or
    /// equal deadline stays as it is.
    package func watch(_ watcher: any DeadlineWatcher, until due: NIODeadline) {
        if watcher.deadlineSlot.isWatched {
            guard due < watcher.deadlineSlot.due else { return }
            watcher.deadlineSlot.due = due
            siftUp(watcher.deadlineSlot.index)
        } else {
            watcher.deadlineSlot = DeadlineSlot(index: heap.count, due: due)
            heap.append(watcher)
            siftUp(heap.count - 1)
        }
        if let timerDue, timerDue <= due { return }
        schedule(at: due)
    }

    /// Forgets `watcher` (its work ended or it no longer waits for anything).
    package func unwatch(_ watcher: any DeadlineWatcher) {
        let index = watcher.deadlineSlot.index
        guard index >= 0 else {
            watcher.deadlineSlot = DeadlineSlot()  // also takes it off the list being told
            return
        }
        precondition(heap[index] === watcher, "a deadline watcher is registered with another loop")
        let last = heap.removeLast()
        if index < heap.count {
            heap[index] = last
            last.deadlineSlot.index = index
            siftDown(index)
            siftUp(last.deadlineSlot.index)
        }
        watcher.deadlineSlot = DeadlineSlot()
        // The timer stays: when it fires for nothing it finds the next deadline.
    }

    private func schedule(at due: NIODeadline) {
        timer?.cancel()
        timerDue = due
        timer = loop.scheduleTask(deadline: due) { [self] in
            timer = nil
            timerDue = nil
            fire()
        }
    }

    /// Takes every watcher whose deadline passed out of the heap and tells it, then sets the
    /// timer for the earliest deadline left.
    private func fire() {
        let now = NIODeadline.now()
        var passed: [any DeadlineWatcher] = []
        while let first = heap.first, first.deadlineSlot.due <= now {
            passed.append(first)
            unwatch(first)
            first.deadlineSlot.index = Self.beingTold
        }
        for watcher in passed {
            // One told before may have ended this one (unwatched) or registered it anew.
            guard watcher.deadlineSlot.index == Self.beingTold else { continue }
            watcher.deadlineSlot = DeadlineSlot()
            watcher.deadlinePassed()
        }
        // Watchers told may have registered again and set the timer, perhaps later than one left.
        guard let earliest = heap.first?.deadlineSlot.due else { return }
        if let timerDue, timerDue <= earliest { return }
        schedule(at: earliest)
    }

    /// The slot index of a watcher taken out of the heap whose turn to be told comes.
    private static let beingTold = -2

    // MARK: the heap

    private func siftUp(_ start: Int) {
        var index = start
        while index > 0 {
            let parent = (index - 1) / 2
            guard heap[index].deadlineSlot.due < heap[parent].deadlineSlot.due else { return }
            swapAt(index, parent)
            index = parent
        }
    }

    private func siftDown(_ start: Int) {
        var index = start
        while true {
            let left = 2 * index + 1
            guard left < heap.count else { return }
            let right = left + 1
            var smallest = left
            if right < heap.count, heap[right].deadlineSlot.due < heap[left].deadlineSlot.due { smallest = right }
            guard heap[smallest].deadlineSlot.due < heap[index].deadlineSlot.due else { return }
            swapAt(index, smallest)
            index = smallest
        }
    }

    private func swapAt(_ a: Int, _ b: Int) {
        heap.swapAt(a, b)
        heap[a].deadlineSlot.index = a
        heap[b].deadlineSlot.index = b
    }
}

extension DeadlineSlot {
    fileprivate init(index: Int, due: NIODeadline) {
        self.index = index
        self.due = due
    }
}
