import Foundation
import NIOCore
import Synchronization
import TollgateCache
import TollgateHTTP

/// A task's part in its background session's records: what it writes as it goes, and how it
/// stops when the session is detached.
extension SessionTask {
    /// Records that the task is to run (`resume`) or not (`suspend`), for a session re-created later.
    func recordRunState(_ action: TaskLifecycle.Action) {
        guard let background = session.background else { return }
        switch action {
        case .start, .unpause: background.update(taskIdentifier) { $0.state = .running }
        case .pause: background.update(taskIdentifier) { $0.state = .suspended }
        case .cancel, .complete, .none: break
        }
    }

    /// Records the task's description and earliest begin date after a change.
    func recordDescriptionAndBeginDate() {
        guard let background = session.background else { return }
        let (description, begin) = observed.withLock { ($0.taskDescription, $0.earliestBeginDate) }
        background.update(taskIdentifier) {
            $0.taskDescription = description
            $0.earliestBeginDate = begin
        }
    }

    /// Where a download's file goes: the background session's own storage (it must outlive the
    /// process), else the temporary directory.
    func newDownloadFilePath() -> String {
        if let background = session.background { return background.newFilePath("download", task: taskIdentifier) }
        return FileManager.default.temporaryDirectory
            .appendingPathComponent("tollgate-download-\(session.identity)-\(taskIdentifier)-\(UUID().uuidString).tmp").path
    }

    /// The download's file was opened for `response`: records what makes it resumable (the
    /// request that got it, its validator, whether the server takes ranges) and where it is.
    func recordDownloadFile(_ file: DownloadFile, response: HTTPResponseHead) {
        guard let background = session.background, let request = currentRequest else { return }
        let record = BackgroundTaskRecord.ResponseRecord(
            status: response.status,
            fields: response.headerFields.map { [$0.name, $0.value] },
            request: DownloadResumeData.RequestRecord(request.head),
            validator: CacheRules.ifRangeValue(for: response.headerFields),
            acceptsRanges: DownloadResumeData.acceptsRanges(response)
        )
        background.update(taskIdentifier) {
            $0.response = record
            $0.partialFile = file.path
            $0.bytesReceived = file.written
            $0.expectedTotalBytes = file.expectedTotal
        }
    }

    /// The download's file grew (written at most every few MiB or seconds).
    func recordDownloadProgress(_ file: DownloadFile) {
        session.background?.progress(taskIdentifier, bytes: file.written, expectedTotal: file.expectedTotal)
    }

    /// Stops the task without completing it, for ``Session/detachBackgroundTasks(completion:)``:
    /// the exchange is dropped (what reached the cache is kept as partial content), a download's
    /// file is closed once its writes are done and its length recorded, and the session forgets
    /// the task without a message to any delegate.
    func detachFromBackgroundSession(then: @escaping @Sendable () -> Void) {
        onLoop { [self] in
            guard !isDone else {
                then()
                return
            }
            session.markDetached(self)
            abandonExchange()
            keepWhatArrived()
            engine.machine.dropHeldPieces()
            cancelWatchdog()
            let file = engine.download
            engine.download = nil
            guard let file else {
                retireAfterHandover()
                then()
                return
            }
            file.pending.whenComplete { [self] _ in
                try? file.handle.close()
                session.background?.progress(taskIdentifier, bytes: file.written, expectedTotal: file.expectedTotal, force: true)
                retireAfterHandover()
                then()
            }
        }
    }
}
