import Foundation

/// The single writer of an environment: runs write closures submitted from any thread on
/// one dedicated thread, grouping those queued together into one transaction (group commit:
/// one fsync for many writes).
///
/// Each closure runs in its own nested transaction, so one that throws is rolled back alone
/// and fails only its own caller. Completions run on the writer thread after the group has
/// committed (or failed), so their writes are durable when they run; keep them short.
///
/// Bounded: at most `queueLimit` closures wait at once (default 1024); beyond that
/// `submit` fails at once with `StoreError.writerQueueFull` rather than blocking, so
/// callers on event loops can shed load. At most `batchLimit` closures (default 256) share
/// one transaction. A closure may run more than once if the map has to grow, and must not
/// start another write of the environment (it would throw `StoreError.nestedTransaction`).
public final class StoreWriter: Sendable {
    /// The environment written to.
    public let environment: Environment
    /// The most closures waiting at once.
    public let queueLimit: Int
    /// The most closures grouped into one transaction.
    public let batchLimit: Int
    private let queue: WriterQueue

    /// Starts the writer thread for `environment`.
    public init(environment: Environment, queueLimit: Int = 1024, batchLimit: Int = 256) {
        precondition(queueLimit > 0 && batchLimit > 0, "StoreWriter limits must be positive")
        self.environment = environment
        self.queueLimit = queueLimit
        self.batchLimit = batchLimit
        let queue = WriterQueue(limit: queueLimit)
        self.queue = queue
        let thread = Thread {
            queue.markWriterThread()
            while let batch = queue.next(maximum: batchLimit) {
                Self.commit(batch, in: environment)
            }
            queue.markExited()
        }
        thread.name = "TollgateStore.writer"
        thread.start()
    }

    /// Lets the thread finish what is queued and exit, without waiting for it.
    deinit {
        queue.stop()
    }

    /// Queues `work`; `completion` later receives its result, on the writer thread, after
    /// the transaction holding it has committed. When the queue is full or the writer shut
    /// down, `completion` is called at once, on the calling thread, with the error.
    public func submit<T: Sendable>(
        _ work: @escaping @Sendable (WriteTransaction) throws -> T,
        completion: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        let request = WriteRequest(
            run: { transaction in
                let value = try work(transaction)
                return { completion(.success(value)) }
            },
            fail: { completion(.failure($0)) }
        )
        if let refusal = queue.enqueue(request) {
            completion(.failure(refusal))
        }
    }

    /// Queues `work` and returns its result once its transaction has committed.
    ///
    /// Cancelling the calling task does not withdraw work already queued.
    public func submit<T: Sendable>(_ work: @escaping @Sendable (WriteTransaction) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            submit(work) { continuation.resume(with: $0) }
        }
    }

    /// Blocks until every closure submitted before this call has committed or failed: a reader
    /// then sees their writes. Returns at once on the writer thread itself (it would wait for
    /// itself) and when the writer no longer takes work.
    public func waitForQueuedWrites() {
        guard !queue.isWriterThread else { return }
        let done = DispatchSemaphore(value: 0)
        submit({ _ in }, completion: { _ in done.signal() })
        done.wait()
    }

    /// Stops accepting work, lets the writer thread finish everything queued, and waits
    /// for it to exit (unless called from the writer thread itself, e.g. a completion).
    /// Later submits fail with `StoreError.writerStopped`.
    public func shutdown() {
        queue.stop()
        if !queue.isWriterThread { queue.waitUntilExited() }
    }

    /// Runs one group in one transaction and reports every outcome.
    private static func commit(_ batch: [WriteRequest], in environment: Environment) {
        // One report per request that has run: its success (pending the commit) or its failure.
        var outcomes: [(succeeded: Bool, report: @Sendable () -> Void)] = []
        do {
            try environment.write { transaction in
                outcomes.removeAll(keepingCapacity: true)  // the closure reruns after map growth
                if batch.count == 1 {  // alone: no sibling to protect, so skip the nested txn
                    outcomes.append((true, try batch[0].run(transaction)))
                    return
                }
                for request in batch {
                    do {
                        outcomes.append((true, try transaction.withNestedTransaction(request.run)))
                    } catch {
                        if transaction.needsGrowth { throw error }  // rerun the group, bigger map
                        outcomes.append((false, { request.fail(error) }))
                    }
                }
            }
        } catch {
            // Nothing committed: the successes fail with the group's error; requests that
            // failed on their own keep their own error.
            for (index, request) in batch.enumerated() {
                if index < outcomes.count, !outcomes[index].succeeded {
                    outcomes[index].report()
                } else {
                    request.fail(error)
                }
            }
            return
        }
        for outcome in outcomes { outcome.report() }
    }
}
