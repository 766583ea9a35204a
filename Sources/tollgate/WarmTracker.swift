import Foundation
import NIOConcurrencyHelpers
import TollgateHTTP
import TollgateSession

/// Follows `tollgate warm`'s download tasks through their sessions' delegate (the policy's,
/// which passes progress and completion on): a re-created background session picks up its tasks
/// and they run before anyone could give them a delegate of their own, so every task — new or
/// picked up — is followed the same way, by identity, from its first event.
final class WarmTracker: DownloadTaskDelegate, SessionDelegate, @unchecked Sendable {
    /// What is known of one transfer.
    struct Transfer: Sendable {
        /// The URL warmed (the task's description; its current request's URL when it has none).
        var name: String
        var firstSeen: Date
        /// Bytes in the file and the whole length (−1 unknown).
        var written: Int64 = 0
        var total: Int64 = -1
        /// Bytes written when this process first heard of the transfer (for its rate).
        var baseline: Int64?
        /// Where the transfer went on from resume data (the last such offset).
        var resumedFrom: Int64?
        var result: Result<Int, SessionError>?
        /// The downloaded body, for a task whose body is kept (``keepBody(of:)``).
        var body: Data?
    }

    private struct State {
        var transfers: [ObjectIdentifier: Transfer] = [:]
        var tasks: [ObjectIdentifier: DownloadTask] = [:]
        var waiters: [ObjectIdentifier: CheckedContinuation<Result<Int, SessionError>, Never>] = [:]
        var keepingBodies: Set<ObjectIdentifier> = []
    }

    /// The largest body kept (a manifest or a token answer is a few kilobytes).
    static let keptBodyLimit = 4 << 20

    /// Keeps `task`'s body (at most ``keptBodyLimit``) in its transfer when it finishes.
    func keepBody(of task: DownloadTask) {
        state.withLockedValue { _ = $0.keepingBodies.insert(ObjectIdentifier(task)) }
    }

    private let state = NIOLockedValueBox(State())

    /// Waits for `task` to complete (at once when it already did): its status, or its error.
    func completion(of task: DownloadTask) async -> Result<Int, SessionError> {
        await withCheckedContinuation { continuation in
            let done = state.withLockedValue { state -> Result<Int, SessionError>? in
                let id = ObjectIdentifier(task)
                state.tasks[id] = task
                if state.transfers[id] == nil { state.transfers[id] = Transfer(name: Self.name(of: task), firstSeen: Date()) }
                if let result = state.transfers[id]?.result { return result }
                state.waiters[id] = continuation
                return nil
            }
            if let done { continuation.resume(returning: done) }
        }
    }

    /// What is known of `task`.
    func transfer(of task: DownloadTask) -> Transfer? {
        state.withLockedValue { $0.transfers[ObjectIdentifier(task)] }
    }

    /// The transfers not yet completed, in the order first heard of.
    var active: [Transfer] {
        state.withLockedValue { $0.transfers.values.filter { $0.result == nil }.sorted { $0.firstSeen < $1.firstSeen } }
    }

    /// Bytes written by every transfer so far.
    var totalWritten: Int64 {
        state.withLockedValue { $0.transfers.values.reduce(0) { $0 + $1.written } }
    }

    // MARK: delegate messages

    func task(_ task: SessionTask, didCompleteWithError error: SessionError?) {
        guard let download = task as? DownloadTask else { return }
        let result: Result<Int, SessionError> = error.map { .failure($0) } ?? .success(task.response?.status ?? 0)
        let waiter = update(download) { transfer in
            transfer.result = result
        }
        waiter?.resume(returning: result)
    }

    func downloadTask(_ task: DownloadTask, didFinishDownloadingTo location: String) {
        guard state.withLockedValue({ $0.keepingBodies.remove(ObjectIdentifier(task)) != nil }) else { return }
        // Read before returning: the file is removed once this message is handled.
        guard let handle = FileHandle(forReadingAtPath: location) else { return }
        defer { try? handle.close() }
        let body = try? handle.read(upToCount: Self.keptBodyLimit + 1)
        guard let body, body.count <= Self.keptBodyLimit else { return }
        _ = update(task) { $0.body = body }
    }

    func downloadTask(_ task: DownloadTask, didWriteData bytesWritten: Int64, totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64) {
        _ = update(task) { transfer in
            if transfer.baseline == nil { transfer.baseline = totalBytesWritten - bytesWritten }
            transfer.written = totalBytesWritten
            transfer.total = totalBytesExpectedToWrite
        }
    }

    func downloadTask(_ task: DownloadTask, didResumeAtOffset fileOffset: Int64, expectedTotalBytes: Int64) {
        _ = update(task) { transfer in
            transfer.resumedFrom = fileOffset
            transfer.written = fileOffset
            transfer.baseline = fileOffset
            transfer.total = expectedTotalBytes
        }
    }

    /// Changes what is known of `task`; returns the waiter to resume once it has a result.
    private func update(
        _ task: DownloadTask, _ change: (inout Transfer) -> Void
    ) -> CheckedContinuation<Result<Int, SessionError>, Never>? {
        state.withLockedValue { state in
            let id = ObjectIdentifier(task)
            state.tasks[id] = task
            var transfer = state.transfers[id] ?? Transfer(name: Self.name(of: task), firstSeen: Date())
            change(&transfer)
            state.transfers[id] = transfer
            guard transfer.result != nil else { return nil }
            return state.waiters.removeValue(forKey: id)
        }
    }

    private static func name(of task: SessionTask) -> String {
        task.taskDescription ?? task.currentRequest?.url.absoluteString ?? task.originalRequest?.url.absoluteString ?? "?"
    }
}
