import CTollgateLoop
import NIOCore

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
    /// The watcher's place in the heap, whose entry keeps its deadline.
    fileprivate var index = -1

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
/// Confined to its loop: every method runs on it, and it is not `Sendable` (its timer callback is
/// scheduled through `assumeIsolated()`, which checks that).
package final class LoopDeadlines {
    private let loop: any EventLoop
    /// A min-heap by `due`; each watcher's `deadlineSlot.index` is its place.
    private var heap: [Entry] = []

    /// A watcher and its deadline, kept beside it: the heap compares deadlines without calling
    /// into (and retaining) the watcher.
    private struct Entry {
        var due: NIODeadline
        let watcher: any DeadlineWatcher
    }
    private var timer: Scheduled<Void>?
    private var timerDue: NIODeadline?

    private init(loop: any EventLoop) {
        self.loop = loop
    }

    /// The deadlines of `loop`, which must be the current thread's loop. Kept in the thread's
    /// state (a C thread-local, retained there and released when the thread exits).
    package static func of(_ loop: any EventLoop) -> LoopDeadlines {
        precondition(loop.inEventLoop, "LoopDeadlines are used on their loop only")
        let state = tollgate_loop_thread()
        if let pointer = state.pointee.deadlines {
            let current = Unmanaged<LoopDeadlines>.fromOpaque(pointer).takeUnretainedValue()
            if current.loop === loop { return current }
            // The thread serves a new loop (an old one on it was shut down): forget the old one.
            state.pointee.deadlines = nil
            Unmanaged<LoopDeadlines>.fromOpaque(pointer).release()
        }
        let made = LoopDeadlines(loop: loop)
        state.pointee.deadlines = Unmanaged.passRetained(made).toOpaque()
        tollgate_loop_thread_release_at_exit { Unmanaged<LoopDeadlines>.fromOpaque($0).release() }
        return made
    }

    /// How many watchers are registered (for tests).
    package var count: Int { heap.count }

    /// The deadline `watcher` is registered for, or nil when it is not watched (for tests).
    package func deadline(of watcher: any DeadlineWatcher) -> NIODeadline? {
        watcher.deadlineSlot.isWatched ? heap[watcher.deadlineSlot.index].due : nil
    }

    /// Tells `watcher` when `due` has passed; a watcher already registered for an earlier or
    /// equal deadline stays as it is.
    package func watch(_ watcher: any DeadlineWatcher, until due: NIODeadline) {
        if watcher.deadlineSlot.isWatched {
            let index = watcher.deadlineSlot.index
            guard due < heap[index].due else { return }
            heap[index].due = due
            siftUp(index)
        } else {
            watcher.deadlineSlot = DeadlineSlot(index: heap.count)
            heap.append(Entry(due: due, watcher: watcher))
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
        precondition(heap[index].watcher === watcher, "a deadline watcher is registered with another loop")
        let last = heap.removeLast()
        if index < heap.count {
            last.watcher.deadlineSlot.index = index
            heap[index] = last  // its last use: moved in, not copied
            siftUp(siftDown(index))
        }
        watcher.deadlineSlot = DeadlineSlot()
        // The timer stays: when it fires for nothing it finds the next deadline.
    }

    private func schedule(at due: NIODeadline) {
        timer?.cancel()
        timerDue = due
        timer = loop.assumeIsolated().scheduleTask(deadline: due) { [self] in
            timer = nil
            timerDue = nil
            fire()
        }
    }

    /// Takes every watcher whose deadline passed out of the heap and tells it, then sets the
    /// timer for the earliest deadline left.
    private func fire() {
        // One event: the watchers told read the same time as this check.
        TickClock.begin()
        defer { TickClock.end() }
        let now = TickClock.now
        var passed: [any DeadlineWatcher] = []
        while let first = heap.first, first.due <= now {
            passed.append(first.watcher)
            unwatch(first.watcher)
            first.watcher.deadlineSlot.index = Self.beingTold
        }
        for watcher in passed {
            // One told before may have ended this one (unwatched) or registered it anew.
            guard watcher.deadlineSlot.index == Self.beingTold else { continue }
            watcher.deadlineSlot = DeadlineSlot()
            watcher.deadlinePassed()
        }
        // Watchers told may have registered again and set the timer, perhaps later than one left.
        guard let earliest = heap.first?.due else { return }
        if let timerDue, timerDue <= earliest { return }
        schedule(at: earliest)
    }

    /// The slot index of a watcher taken out of the heap whose turn to be told comes.
    private static let beingTold = -2

    // MARK: the heap

    // Entries move by swapping them in the heap's own buffer: a swap moves the two references
    // without retaining or releasing either (a copy of an entry out and back in did, two or three
    // times per level: ~20 retains per pass-through request, which watches and unwatches a task
    // and an exchange in a heap of a few dozen). Each watcher passed is told its new index.

    private func siftUp(_ start: Int) {
        heap.withUnsafeMutableBufferPointer { heap in
            var index = start
            while index > 0 {
                let parent = (index - 1) / 2
                guard heap[index].due < heap[parent].due else { break }
                heap.swapAt(index, parent)
                heap[index].watcher.deadlineSlot.index = index
                index = parent
            }
            if index != start { heap[index].watcher.deadlineSlot.index = index }
        }
    }

    /// Returns the index where the entry came to rest.
    @discardableResult
    private func siftDown(_ start: Int) -> Int {
        heap.withUnsafeMutableBufferPointer { heap in
            var index = start
            while true {
                let left = 2 * index + 1
                guard left < heap.count else { break }
                let right = left + 1
                var smallest = left
                if right < heap.count, heap[right].due < heap[left].due { smallest = right }
                guard heap[smallest].due < heap[index].due else { break }
                heap.swapAt(index, smallest)
                heap[index].watcher.deadlineSlot.index = index
                index = smallest
            }
            if index != start { heap[index].watcher.deadlineSlot.index = index }
            return index
        }
    }
}

extension DeadlineSlot {
    fileprivate init(index: Int) {
        self.index = index
    }
}
