import Foundation

/// One unit of `StoreWriter` work, with its result type erased.
struct WriteRequest: Sendable {
    /// Runs the work in a transaction and returns how to report its success; the report
    /// runs only once the group's transaction has committed.
    let run: @Sendable (WriteTransaction) throws -> @Sendable () -> Void
    /// Reports a failure.
    let fail: @Sendable (any Error) -> Void
}

/// The bounded queue between `StoreWriter.submit` and the writer thread.
final class WriterQueue: @unchecked Sendable {
    // @unchecked: every mutable field is guarded by `condition`.
    private let condition = NSCondition()
    private var pending: [WriteRequest] = []
    private var stopping = false
    private var exited = false
    private let limit: Int
    /// 1 on the writer thread, to spot `shutdown()` called from a completion.
    private let writerThreadMark = ThreadLocalCounter()

    init(limit: Int) {
        self.limit = limit
    }

    /// Queues a request, or returns why it cannot be.
    func enqueue(_ request: WriteRequest) -> StoreError? {
        condition.lock()
        defer { condition.unlock() }
        if stopping { return .writerStopped }
        if pending.count >= limit { return .writerQueueFull }
        pending.append(request)
        condition.signal()
        return nil
    }

    /// Waits for work and takes up to `maximum` requests, oldest first; nil once stopping
    /// with nothing left.
    func next(maximum: Int) -> [WriteRequest]? {
        condition.lock()
        defer { condition.unlock() }
        while pending.isEmpty, !stopping { condition.wait() }
        if pending.isEmpty { return nil }
        let batch = Array(pending.prefix(maximum))
        pending.removeFirst(batch.count)
        return batch
    }

    /// Refuses new requests; the writer thread finishes the queued ones, then exits.
    func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
    }

    /// Called by the writer thread when it starts.
    func markWriterThread() {
        writerThreadMark.value = 1
    }

    /// True on the writer thread.
    var isWriterThread: Bool {
        writerThreadMark.value == 1
    }

    /// Called by the writer thread as it exits.
    func markExited() {
        condition.lock()
        exited = true
        condition.broadcast()
        condition.unlock()
    }

    /// Blocks until the writer thread has exited.
    func waitUntilExited() {
        condition.lock()
        while !exited { condition.wait() }
        condition.unlock()
    }
}
